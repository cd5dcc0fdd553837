"""benchmarks/decided.py (findings.py --until-decided): a finding's accuracy claim looked at after every batch,
stopped at a verdict or at the time cap, its row saying what it used and what a fixed size would need. On the
SIMULATED arithmetic policy (tests.adaptive.sim, not a model)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Coroutine, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.adaptive.sim import SeededSimulator
from ttscale.stats.power import Claim


@pytest.fixture(scope="module")
def decided() -> Iterator[ModuleType]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    try:
        import decided as module

        yield module
    finally:
        sys.path.pop(0)


class Sync:
    """What findings.py's BlockingEngine offers a finding: an engine and a loop to run a coroutine on."""

    def __init__(self) -> None:
        self.engine = SeededSimulator(seed=1)
        self.loop = self

    def run(self, work: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run(work)


def sides(decided: ModuleType) -> dict[str, Any]:
    task = "arithmetic:1-3"
    return {"a": decided.Side(strategy="best_of_n", budget="400", params={"n": 1, "max_tokens": 40}, task=task),
            "b": decided.Side(strategy="best_of_n", budget="400", params={"n": 1, "max_tokens": 2}, task=task)}


def test_a_clear_difference_is_decided_early_with_what_it_used(decided: ModuleType) -> None:
    found = decided.decide(Sync(), **sides(decided), claim=Claim(kind="better", value=0.0), max_problems=60,
                           batch=6, repeats=2, seconds=600)
    assert found["decided"] and found["outcome"] == "reproduced" and found["stopped_by"] == "verdict"
    assert found["problems"] < 60 and found["look"] == len(found["reads"]) < found["looks"] == 10
    assert [r["problems"] for r in found["reads"]] == [6 * k for k in range(1, found["look"] + 1)]
    assert found["tokens"] > 0 and found["fixed_size_80"] >= 2
    yes, used, tokens, fixed, detail = decided.row_text(found)
    assert yes == "yes: reproduced" and used == f"{found['problems']} × 2" and float(tokens) > 0
    assert fixed == f"{found['fixed_size_80']} × 2 (reproduced)"
    assert "stopped by the verdict" in detail and "deciding it needs" not in detail


def test_the_time_cap_stops_it_undecided_and_the_row_names_the_size_that_would_decide(decided: ModuleType) -> None:
    found = decided.decide(Sync(), **sides(decided), claim=Claim(kind="equal", value=0.01), max_problems=60,
                           batch=6, repeats=1, seconds=0.0)
    assert not found["decided"] and found["stopped_by"] == "time" and found["problems"] == 6
    assert found["outcome"] == "undecided at the time cap"
    no, _, _, fixed, detail = decided.row_text(found)
    assert no == "no: undecided at the time cap"
    # A difference of tens of points is never "equal within ±1 point": the size named decides it the other way.
    assert found["difference"] > 0.1 and found["fixed_size_verdict"] == "not reproduced"
    assert fixed == f"{found['fixed_size_80']} × 1 (not reproduced)"
    assert f"deciding it needs {found['fixed_size_80']} × 1 problems, about" in detail
