"""`ttscale allocate --space grm` and verifier-option dimensions (ttscale/allocsearch/spaces.py): a dimension named
`verifier.samples` sets GRM's k inside the strategy's `verifier` spec. On the SIMULATOR (not a model: its GRM samples
carry no scores, so the test checks what is metered and recorded, not accuracy)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import ttscale
from ttscale.allocsearch.run import make_study
from ttscale.testing.policy import SimulatedArithmeticPolicy

SETTINGS: dict[str, Any] = {"solutions": (2,), "max_tokens": 32, "verify_tokens": 16,
                            "verifier.samples": (1, 2, 4, 8)}


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_search_over_grm_samples_records_k_meters_its_tokens_and_resumes_the_same_space(tmp_path: Path) -> None:
    out = tmp_path / "search"
    policy = SimulatedArithmeticPolicy(seed=0)
    result = ttscale.allocate(space="grm", proposers=("random",), seeds=(0,), trials=2, limit=3, engine=policy,
                              out=out, settings=SETTINGS, total_budget=512)
    assert result.table.points == 4
    header = json.loads((out / "searches" / "truth" / "search.json").read_text())
    assert header["dimensions"] == {"n": [2], "verifier.samples": [1, 2, 4, 8]}
    truth = _lines(out / "searches" / "truth" / "trials.jsonl")
    assert [t["allocation"] for t in truth] == [{"n": 2, "verifier.samples": k} for k in (1, 2, 4, 8)]
    # Each cell ran best-of-N with GRM at its k; the GRM's generation is verifier work on the ledger, k samples of
    # 16 tokens per problem, and a trial's cost (what allocate compares) includes it.
    verifier, policy_tokens = {}, {}
    for cell in (out / "sweep" / "cells").iterdir():
        k = int(cell.name.split("samples=")[1].split("-")[0])
        assert json.loads((cell / "config.json").read_text())["spec"]["params"]["verifier"].endswith(f"samples={k}")
        ledgers = [r["ledger"] for r in _lines(cell / "results.jsonl")]
        verifier[k] = [ledger["verifier"]["generated_tokens"] for ledger in ledgers]
        policy_tokens[k] = sum(ledger["generated_tokens"] - ledger["verifier"]["generated_tokens"]
                               for ledger in ledgers) / len(ledgers)
    assert verifier == {k: [16 * k] * 3 for k in (1, 2, 4, 8)}
    costs = {t["allocation"]["verifier.samples"]: t["cost"] for t in truth}
    assert {k: costs[k] - policy_tokens[k] for k in costs} == pytest.approx({k: 16 * k for k in (1, 2, 4, 8)})
    first = _lines(out / "searches" / "random-s0" / "trials.jsonl")
    assert len(first) == 2
    # Resumed with more trials: the same space (its header unchanged), the two trials kept, two more added, and the
    # engine asked for nothing (every cell is stored).
    again = SimulatedArithmeticPolicy(seed=0)
    ttscale.allocate(space="grm", proposers=("random",), seeds=(0,), trials=4, limit=3, engine=again, out=out,
                     settings=SETTINGS, total_budget=512)
    resumed = _lines(out / "searches" / "random-s0" / "trials.jsonl")
    assert resumed[:2] == first and len(resumed) == 4 and not again.requests
    assert sorted(t["allocation"]["verifier.samples"] for t in resumed) == [1, 2, 4, 8]
    # Another space in the same directory is refused in one line.
    with pytest.raises(ValueError, match="holds another allocation search \\(it differs in settings\\)"):
        ttscale.allocate(space="grm", proposers=("random",), seeds=(0,), trials=4, limit=3, engine=again, out=out,
                         settings={**SETTINGS, "verifier.samples": (1, 2)}, total_budget=512)


def test_the_default_grm_space_and_its_meta_rm_cells() -> None:
    study = make_study("grm", {})
    assert [d.name for d in study.space.dimensions] == ["n", "verifier.samples"]
    assert {p["verifier.samples"] for p in study.space.points()} == {1, 2, 4, 8}
    params, budget = study.cell_of({"n": 4, "verifier.samples": 8})
    assert params == {"max_tokens": "128", "n": "4", "verifier": "grm:max_tokens=128,group=4,samples=8"}
    assert budget == "2048"
    # With a meta RM of its own options, k_meta is a dimension too, k_meta ≤ k a rule, and the meta RM's spec sits
    # in parentheses inside each cell's grm spec.
    meta = make_study("grm", {"meta": "prm:model=DIR,aggregate=min", "solutions": (2,),
                              "strategy": "self_consistency"})
    points = meta.space.points()
    assert len(points) == 10 and all(p["verifier.meta_top"] <= p["verifier.samples"] for p in points)
    assert meta.space.check({"n": 2, "verifier.samples": 1, "verifier.meta_top": 2}) == (
        "n=2, verifier.samples=1, verifier.meta_top=2 is not allowed: k_meta (verifier.meta_top) must be ≤ k "
        "(verifier.samples)")
    params, _ = meta.cell_of({"n": 2, "verifier.samples": 4, "verifier.meta_top": 2})
    assert params["verifier"] == "grm:max_tokens=128,group=4,meta=(prm:model=DIR,aggregate=min),samples=4,meta_top=2"
    assert meta.entry().startswith("self_consistency max_tokens=128 n=2 verifier=grm:")
    # Any option the verifier takes can be a dimension (`PARAM.OPTION`), in beam's arithmetic verifier too.
    assert [d.name for d in make_study("beam", {"verifier.neutral": (0.5, 0.7)}).space.dimensions][-1] == \
        "verifier.neutral"


@pytest.mark.parametrize(("settings", "message"), [
    ({"verifier.k": (1, 2)}, "space grm: dimension 'verifier.k': verifier grm has no option 'k' (its options: group, "
                             "max_tokens, meta, meta_top, samples, shuffle, temperature)"),
    ({"verifier.samples": (0, 1)}, "samples must be ≥ 1, got 0"),
    ({"meta": "llm_judge:bogus=1"}, "grm's option meta: verifier llm_judge has no option 'bogus'"),
])
def test_a_bad_verifier_dimension_is_one_line(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as refused:
        make_study("grm", settings)
    assert message in str(refused.value) and "\n" not in str(refused.value)
    with pytest.raises(ValueError, match="sets an option of the verifier spec 'verifier', which the space does not "
                                         "fix"):
        make_study("genrm", {"verifier.samples": (1, 2)})


def test_the_cli_refuses_an_unknown_verifier_option_with_exit_2(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    from ttscale.cli import main

    out = tmp_path / "x"
    assert main(["allocate", "--space", "grm", "--setting", "verifier.k=1,2", "--out", str(out)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "verifier grm has no option 'k' (its options: group, max_tokens, meta" in lines[0]
    assert not out.exists()
