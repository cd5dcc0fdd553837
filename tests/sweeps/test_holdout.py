"""Difficulty without leakage: the held-out pool, equal bins with random ties, verifier bins, P4 (no engine)."""

from __future__ import annotations

import asyncio
import math
import random
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from tests.adaptive.sim import (
    CANDIDATES,
    PER_BIN,
    SeededSimulator,
    engine_config,
    synthetic_outcomes,
    synthetic_problems,
)
from ttscale.cli import main
from ttscale.kit.context import SeededEngine
from ttscale.routing.difficulty import Features, assign_bins, assign_equal, equal_cuts, quantile_thresholds, tie_breaker
from ttscale.routing.policy import Difficulty, LearnOptions, Policy, learn_policy
from ttscale.routing.savings import baseline_tokens, tokens_saved
from ttscale.schema import SamplingParams
from ttscale.sweeps import HOLDOUT_SEED, GridEntry, SweepSpec, cell_dir, create_sweep, run_sweep
from ttscale.sweeps.holdout import difficulty, holdout_cells, learn_from_sweep
from ttscale.sweeps.outcomes import load_results


class SeedEcho(SeededSimulator):
    """SIMULATED: the scripted policy, its RNG reseeded by each request's seed and each text tagged with the seed
    and the sample's index, so a sample is a function of its request seed and two draws never look alike by chance."""

    def __init__(self) -> None:
        super().__init__(seed=0)
        self.seeds: list[int | None] = []

    async def generate(self, prompt: Any, params: SamplingParams, *, seed: int | None = None) -> Any:
        self.seeds.append(seed)
        self.rng = random.Random(seed)
        out = await super().generate(prompt, params, seed=seed)
        tagged = tuple(replace(c, text=f"[{seed}:{i}] {c.text}") for i, c in enumerate(out.completions))
        return replace(out, completions=tagged)


# -- equal bins -----------------------------------------------------------------------------------

PASS1 = [0, 0, 0, 0, 0, 0, 0.2, 0.5, 1, 1]


def test_equal_bins_share_a_tie_between_bins_by_its_tie_breakers() -> None:
    # Worked by hand: ranked 1, 1 | .5, .2 | 0 (u .1), 0 (.2) | 0 (.3), 0 (.4) | 0 (.5), 0 (.6): two per bin.
    ties = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.95, 0.9, 0.7, 0.8]
    cuts = equal_cuts(PASS1, ties, bins=5)
    # Between distinct values the midpoint; inside the tie the value and the midpoint of the two u's.
    assert [x for cut in cuts for x in cut] == pytest.approx([0.75, 0.5, 0.1, 0.5, 0.0, 0.25, 0.0, 0.45])
    assert assign_equal(PASS1, ties, cuts) == [3, 3, 4, 4, 5, 5, 2, 2, 1, 1]
    # An unseen problem goes to the bin whose edge it is nearer: .15 is nearer .2 (bin 2), .05 nearer 0.
    assert assign_equal([0.15, 0.05, 0.0], [0.0, 0.0, 0.99], cuts) == [2, 3, 5]
    # Before: ties went to the harder bin, so all six never-solved problems shared bin 5 and bins 3-4 were empty.
    assert assign_bins(PASS1, quantile_thresholds(PASS1, bins=5)).count(5) == 6


def test_seeded_tie_breakers_make_equal_bins_reproducible_and_random() -> None:
    ids = [f"q{i}" for i in range(10)]

    def bins(seed: int) -> list[int]:
        ties = [tie_breaker(p, seed=seed) for p in ids]
        return assign_equal(PASS1, ties, equal_cuts(PASS1, ties, bins=5))

    for seed in range(5):
        got = bins(seed)
        assert [got.count(k) for k in range(1, 6)] == [2] * 5
        assert got[6:] == [2, 2, 1, 1] and set(got[:6]) == {3, 4, 5}
        assert bins(seed) == got
    assert len({tuple(bins(seed)[:6]) for seed in range(5)}) > 1  # another seed, another share of the tie
    assert 0 <= tie_breaker("q0", seed=0) < 1 and tie_breaker("q0", seed=0) != tie_breaker("q0", seed=1)


# -- verifier bins --------------------------------------------------------------------------------


def verifier_difficulty() -> dict[str, Difficulty]:
    """Verifier means that follow the bins: 0.9, 0.6, 0.35, 0.1, 0 (12 problems each, tied within a bin)."""
    means = {1: 0.9, 2: 0.6, 3: 0.35, 4: 0.1, 5: 0.0}
    return {pid: Difficulty(pass1=means[k], features=Features(agreement=0.5, verifier_mean=means[k]),
                            probe_correct=0.0, probe_spent=40.0) for pid, k in synthetic_problems()}


def test_verifier_bins_follow_the_probes_mean_verifier_score(tmp_path: Path) -> None:
    policy = learn_policy(outcomes=synthetic_outcomes(), difficulty=verifier_difficulty(),
                          options=LearnOptions(bins="verifier"), candidates=CANDIDATES)  # type: ignore[arg-type]
    assert [policy["policy"][str(k)]["problems"] for k in range(1, 6)] == [PER_BIN] * 5
    # Cuts halfway between the bins' verifier means (worked by hand), the same on every held-out fold.
    assert [c[0] for c in policy["difficulty"]["verifier_cuts"]] == pytest.approx([0.75, 0.475, 0.225, 0.05])
    assert policy["difficulty"]["predicted_vs_oracle_heldout"]["exact"] == 1.0
    assert policy["policy"]["3"]["budgets"]["1024"]["choice"]["candidate"] == "C"
    path = tmp_path / "policy.json"
    import json

    path.write_text(json.dumps(policy))
    loaded = Policy.load(path)
    assert loaded.bin_of(Features(agreement=0.0, verifier_mean=0.8), problem_id="x") == 1
    assert loaded.bin_of(Features(agreement=1.0, verifier_mean=0.3), problem_id="x") == 3
    with pytest.raises(ValueError, match="needs the probe's mean verifier score"):
        loaded.bin_of(Features(agreement=1.0))
    no_verifier = {p: Difficulty(pass1=d.pass1, features=Features(agreement=0.5)) for p, d in
                   verifier_difficulty().items()}
    with pytest.raises(ValueError, match="--probe-verifier"):
        learn_policy(outcomes=synthetic_outcomes(), difficulty=no_verifier, options=LearnOptions(bins="verifier"),
                     candidates=CANDIDATES)  # type: ignore[arg-type]


# -- P4: tokens saved at equal accuracy -----------------------------------------------------------


def test_baseline_tokens_interpolate_in_log_tokens_on_the_envelope() -> None:
    curve = [(100, 0.2), (200, 0.4), (400, 0.5), (800, 0.7)]
    # .6 is halfway from .5 (400) to .7 (800): halfway in log tokens is sqrt(400 · 800) = 565.69.
    assert baseline_tokens(curve, 0.6) == (pytest.approx(400 * math.sqrt(2)), "exact")
    assert baseline_tokens(curve, 0.4) == (pytest.approx(200), "exact")
    assert baseline_tokens(curve, 0.1) == (100, "at_most")
    assert baseline_tokens(curve, 0.8) == (800, "at_least")
    # A dip is not a cheaper way down: the envelope keeps .5 from 100 tokens, so .55 lies between 200 and 400.
    assert baseline_tokens([(100, 0.5), (200, 0.3), (400, 0.6)], 0.55) == (pytest.approx(200 * math.sqrt(2)), "exact")


def test_tokens_saved_against_the_verifier_weighted_vote_by_hand() -> None:
    # 4 problems. Weighted vote W: 1 of 4 right at 100 tokens, 2 of 4 at 400. Plain vote U is better but no baseline.
    table = SimpleNamespace(
        budgets=[100.0, 400.0],
        candidates={100.0: ["U", "W"], 400.0: ["U", "W"]},
        correct={100.0: np.array([[1, 1, 1, 1], [1, 0, 0, 0]], dtype=float),
                 400.0: np.array([[1, 1, 1, 1], [1, 1, 0, 0]], dtype=float)},
        spent={100.0: np.full((2, 4), 100.0), 400.0: np.full((2, 4), 400.0)},
    )
    cands = {"U": {"strategy": "self_consistency", "params": {}},
             "W": {"strategy": "self_consistency", "params": {"verifier": "arithmetic"}}}
    # The policy at 100: 2 of 4 right, 50 tokens + a 10-token probe = 60; at 400: 3 of 4 right.
    held = {100.0: np.array([[1, 1, 0, 0], [50, 50, 50, 50]], dtype=float),
            400.0: np.array([[1, 1, 1, 0], [50, 50, 50, 50]], dtype=float)}
    report = tokens_saved(table, held, np.full(4, 10.0), candidates=cands, resamples=200, seed=0)
    assert report["baseline"].startswith("verifier-weighted")
    at100, at400 = report["budgets"]["100"], report["budgets"]["400"]
    # W reaches .5 exactly at 400 tokens: 400 / 60 = 6.667.
    assert (at100["policy_accuracy"], at100["policy_tokens"], at100["baseline_tokens"]) == (0.5, 60.0, 400.0)
    assert at100["ratio"] == pytest.approx(6.667) and at100["bound"] == "exact"
    # W at 400 is right exactly where the policy is: every resample reaches it at 400 (6.667), or, when it
    # drew no problem 2 (chance (3/4)^4 = 32%), W's 100-token point already ties the policy (100 / 60 = 1.667).
    assert at100["ci95"] == [1.667, 6.667] and at100["censored_share"] == 0
    # At 400 the policy also solves problem 3, which W never does: a lower bound, unbounded above in resamples.
    assert at400["bound"] == "at_least" and at400["ratio"] == pytest.approx(400 / 60, abs=1e-3)
    assert at400["ci95"][1] is None and 0.5 < at400["censored_share"] < 0.9  # P(problem 3 drawn) = 68%
    # Without a weighted vote, the best fixed candidate (U, 100% at 100 tokens) is the baseline: at most 100/60.
    fallback = tokens_saved(table, held, np.full(4, 10.0), candidates={"U": cands["U"]}, resamples=200, seed=0)
    assert fallback["baseline"].startswith("best fixed candidate")
    assert fallback["budgets"]["100"]["bound"] == "at_most"
    assert fallback["budgets"]["100"]["ratio"] == pytest.approx(100 / 60, abs=1e-3)


# -- the held-out pool of a sweep -----------------------------------------------------------------


def holdout_sweep(tmp_path: Path, *, holdout: int) -> tuple[SweepSpec, Path, SeedEcho]:
    # best_of_n at 320 tokens and 40 per sample asks n = 8: the very request the held-out pool (n = 8) sends.
    spec = SweepSpec(grid=(GridEntry.parse("best_of_n max_tokens=40"),
                           GridEntry.parse("self_consistency max_tokens=40 verifier=arithmetic")),
                     budgets=("160", "320"), task="arithmetic:1-3", limit=6, engine=engine_config(tmp_path),
                     holdout=holdout)
    root = tmp_path / "sweep"
    create_sweep(spec, root, command=["test"])
    engine = SeedEcho()
    asyncio.run(run_sweep(spec, root, engine=engine, progress=False, log=lambda _: None))
    return spec, root, engine


def test_the_held_out_pool_samples_with_the_max_tokens_its_candidates_ran(tmp_path: Path) -> None:
    from ttscale.sweeps import GridEntry, SweepSpec

    data = tmp_path / "math.jsonl"
    data.write_text('{"question": "1/2 + 1/2?", "answer": "1"}\n', encoding="utf-8")
    # MATH-style: no max_tokens in the grid, so the task's 2048 capped at the largest budget (1024) applies.
    spec = SweepSpec(grid=(GridEntry.parse("best_of_n n=4"),), budgets=("512", "1024"), task=f"jsonl:{data}",
                     holdout=8)
    [cell] = holdout_cells(spec)
    assert cell.params["max_tokens"] == "1024" and cell.budget == str(8 * 1024)


def test_the_held_out_pool_shares_no_sample_with_any_candidate(tmp_path: Path) -> None:
    spec, root, _ = holdout_sweep(tmp_path, holdout=8)
    [cell] = holdout_cells(spec)
    # The candidates' sampling settings, resolved as their largest-budget cell ran them.
    assert cell.params == {"n": "8", "max_tokens": "40", "temperature": "0.8", "top_p": "1.0"}
    assert cell.id.startswith("holdout-")
    assert cell.id not in {c.id for c in spec.cells()}  # not a candidate: no outcome, no policy choice
    held = {r["id"]: r for r in cell_dir(root, cell).records()}
    assert all(len(r["samples"]) == 8 for r in held.values())
    source = next(c for c in spec.cells() if c.strategy == "best_of_n" and c.source is None)
    cand = {r["id"]: r for r in cell_dir(root, source).records()}
    problem = next(iter(held))
    prompt = SeedEcho().chat_prompt([{"role": "user", "content": "x"}])
    request = SamplingParams(n=8, temperature=0.8, max_tokens=40, logprobs=0)
    # Under the candidates' run seed the same request would draw the same seed, hence the same samples ...
    same = [SeededEngine(SeedEcho(), run_seed=0, problem_id=problem).seed_for(prompt, request) for _ in "ab"]
    own = SeededEngine(SeedEcho(), run_seed=HOLDOUT_SEED, problem_id=problem).seed_for(prompt, request)
    assert same[0] == same[1] != own
    # ... while the held-out pool's samples (a function of their request seeds here) are none of the candidates'.
    records = [r for c in spec.cells() for r in cell_dir(root, c).records()]
    for pid, rec in held.items():
        assert cand[pid]["info"]["n"] == 8  # the candidate really sent the request the pool sent
        every_cand = {s["text"] for r in records if r["id"] == pid for s in r["samples"]}
        assert len(every_cand) >= 8 and not {s["text"] for s in rec["samples"]} & every_cand


def test_difficulty_reads_the_probe_and_pass1_from_disjoint_parts_of_the_held_out_pool(tmp_path: Path) -> None:
    spec, root, _ = holdout_sweep(tmp_path, holdout=8)
    results = load_results(root)
    diff, settings, meta = difficulty(results, probe_n=3, probe_verifier="arithmetic")
    assert meta["difficulty_source"] == "holdout" and meta["pass1_samples_min"] == 5
    assert (settings.n, settings.max_tokens, settings.temperature) == (3, 40, 0.8)
    [cell] = holdout_cells(spec)
    by_id = {q.id: q for q in results.problems}
    for rec in cell_dir(root, cell).records():
        d = diff[rec["id"]]
        rest = rec["samples"][3:]
        assert d.pass1 == sum(bool(results.task.grade(s["answer"], by_id[rec["id"]])) for s in rest) / 5
        assert d.probe_spent == sum(s["num_tokens"] for s in rec["samples"][:3])
    _, _, old = difficulty(results, probe_n=3, source="pools")
    assert old["difficulty_source"] == "pools" and "optimistic" in old["leakage"]
    with pytest.raises(ValueError, match="p̂₁ needs at least one more"):
        difficulty(results, probe_n=8)
    policy = learn_from_sweep(root, options=LearnOptions(bins="verifier", n_bins=2), probe_n=3)
    assert policy["difficulty_source"] == "holdout" and "leakage" not in policy
    assert policy["task_defaults"] is True  # its cells ran with the task's suggestions: adaptive routes alike
    saved = policy["cross_validation"]["tokens_saved"]
    assert saved["baseline"].startswith("verifier-weighted") and set(saved["budgets"]) == {"160", "320"}


def test_a_policy_needs_the_held_out_pool_it_is_told_to_use(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    _, root, _ = holdout_sweep(tmp_path, holdout=0)
    assert main(["policy", "--sweep", str(root), "--difficulty-from", "holdout"]) == 2
    err = capsys.readouterr().err
    assert "no held-out difficulty pool" in err and err.count("\n") == 1
    assert main(["policy", "--sweep", str(root), "--n-bins", "2", "--out", str(tmp_path / "p.json")]) == 0
    captured = capsys.readouterr()
    assert "warning" in captured.err and "optimistic" in captured.err and "P4" in captured.out
    with pytest.raises(ValueError, match="holdout must be ≥ 0"):
        SweepSpec(grid=(GridEntry.parse("best_of_n"),), budgets=("100",), seeds=(0, HOLDOUT_SEED), holdout=4)


def test_a_verifier_bin_policy_routes_a_live_problem_by_its_probes_verifier_score(tmp_path: Path) -> None:
    import json

    from tests.adaptive.sim import prepared_for
    from ttscale.routing.difficulty import ProbeSettings
    from ttscale.running.runner import solve

    policy = learn_policy(outcomes=synthetic_outcomes(), difficulty=verifier_difficulty(),
                          options=LearnOptions(bins="verifier"), candidates=CANDIDATES,  # type: ignore[arg-type]
                          probe=ProbeSettings(n=2, max_tokens=48))
    path = tmp_path / "policy.json"
    path.write_text(json.dumps(policy))
    prepared = prepared_for("adaptive", 2000, params={"policy": str(path)})
    problem = prepared.problems[0]
    record = asyncio.run(solve(prepared, SeededSimulator(seed=4), problem)).to_json()
    assert record["error"] is None
    info = record["info"]
    score = info["probe"]["verifier_mean"]
    assert score is not None  # the arithmetic verifier scored the probe: its mean picks the bin
    assert info["bin"] == Policy.load(path).bin_of(Features(agreement=0.0, verifier_mean=score), problem_id=problem.id)
    assert info["choice"]["params"] == CANDIDATES[policy["policy"][str(info["bin"])]["budgets"]["1024"]["choice"]
                                                  ["candidate"]]["params"]
