"""Capabilities declared at registration: a new strategy with a replay is one file and its registry line, and a
sweep derives its smaller budgets; the declarations (not names) decide what sweeps, held-out cells and adaptive do."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

import ttscale
from ttscale.kit.capabilities import capabilities
from ttscale.strategies import STRATEGIES
from ttscale.sweeps import GridEntry, SweepSpec
from ttscale.testing.policy import SimulatedArithmeticPolicy

#: The whole of a new strategy: the shortest sample's answer, replayable from its pool.
NEW_STRATEGY = '''
from dataclasses import dataclass

from ttscale.kit.capabilities import pool_replay
from ttscale.kit.params import strategy
from ttscale.blocks.sampling import PoolParams, sample_pool
from ttscale.schema import Answer


def shortest(samples, p):
    best = min(samples, key=lambda s: s.num_tokens, default=None)
    return (best.answer if best else None), {"n": len(samples)}


@dataclass(frozen=True, kw_only=True)
class ShortestParams(PoolParams):
    pass


@strategy(ShortestParams, replay=pool_replay(shortest))
async def shortest_sample(problem, ctx, p):
    samples = [ctx.sample(c) for c in await sample_pool(ctx, p)]
    prediction, info = shortest(samples, p)
    return Answer(prediction=prediction, samples=tuple(samples), info=info)
'''


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """The strategy registry as it is, restored after the test."""
    for name in ("_targets", "_aliases", "_loaded"):
        monkeypatch.setattr(STRATEGIES, name, dict(getattr(STRATEGIES, name)))


def _add_strategy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str, module: str) -> None:
    (tmp_path / f"{module}.py").write_text(textwrap.dedent(source))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, module, raising=False)
    STRATEGIES.register("shortest_sample", f"{module}:shortest_sample")  # the registry line


def test_a_new_strategy_with_a_replay_is_one_file_and_a_sweep_derives_its_smaller_budgets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, registry: None
) -> None:
    _add_strategy(tmp_path, monkeypatch, NEW_STRATEGY, "shortest_strategy_module")
    out = tmp_path / "sweep"
    grid = ttscale.sweep(strategies=["shortest_sample max_tokens=48"], budgets=[96, 192], limit=4, out=out,
                         engine=SimulatedArithmeticPolicy(seed=0))
    cells = {c["budget"]: c for c in grid.cells}
    assert cells["192"]["derived_from"] is None and cells["96"]["derived_from"] is not None
    derived = ttscale.load_runs(out / "cells" / next(p.name for p in (out / "cells").iterdir() if "-b96-" in p.name))
    assert len(derived) == 4
    # Each derived problem spent within its budget, from fewer samples than its source, and selected as the
    # strategy does (the shortest sample's answer).
    assert (derived["spent"] <= 96).all()
    records = [json.loads(line) for f in (out / "cells").glob("*-b96-*/results.jsonl")
               for line in f.read_text().splitlines()]
    sources = {json.loads(line)["id"]: json.loads(line) for f in (out / "cells").glob("*-b192-*/results.jsonl")
               for line in f.read_text().splitlines()}
    assert len(records) == 4
    for record in records:
        assert record["info"]["derived_from"] and 0 < len(record["samples"]) < len(sources[record["id"]]["samples"])
        shortest = min(record["samples"], key=lambda s: s["num_tokens"])
        assert record["prediction"] == shortest["answer"]


def test_without_a_declared_replay_every_cell_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   registry: None) -> None:
    _add_strategy(tmp_path, monkeypatch, NEW_STRATEGY.replace(", replay=pool_replay(shortest)", ""),
                  "shortest_strategy_plain")
    assert capabilities(STRATEGIES.get("shortest_sample")).replay is None
    spec = SweepSpec(grid=(GridEntry.parse("shortest_sample max_tokens=48"),), budgets=("96", "192"))
    assert [c.source for c in spec.cells()] == [None, None]


def test_built_in_declarations_decide_sweeps_holdout_and_adaptive() -> None:
    declared = {name: capabilities(STRATEGIES.get(name)) for name in STRATEGIES.names()}
    assert {n for n, c in declared.items() if c.replay is not None} == {
        "best_of_n", "self_consistency", "sleep_time", "genrm", "deepconf", "budget_forcing"}
    assert {n for n, c in declared.items() if c.difficulty_pool} == {"best_of_n", "self_consistency"}
    assert {n for n, c in declared.items() if not c.adaptive_candidate} == {"adaptive"}
    assert {n for n, c in declared.items() if c.check_problems is not None} == {"sleep_time", "generated_tests"}
    # The varied parameters and the source point come from the declaration: GenRM's largest (S, V) feeds the rest.
    spec = SweepSpec(grid=(GridEntry.parse("genrm n=2|4 verifications=1|2"),), budgets=("256", "512"))
    sources = {c.source for c in spec.cells() if c.source}
    assert sources == {"genrm-n=4-verifications=2-e506d4-b512-s0"}
    # Subsampling off, or a FLOP budget: nothing is derived whatever the strategy declares.
    assert all(c.source is None for c in SweepSpec(grid=spec.grid, budgets=spec.budgets, subsample=False).cells())
