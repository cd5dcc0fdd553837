"""The adaptive strategy: the probe in the ledger, routing by the policy, and total budgets never exceeded."""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.adaptive.sim import SeededSimulator, prepared_for, synthetic_policy
from ttscale.budget import Budget
from ttscale.evals.arithmetic import ArithmeticTask
from ttscale.kit.params import parse_params
from ttscale.pipeline import execute
from ttscale.routing.difficulty import ProbeSettings
from ttscale.routing.policy import Policy
from ttscale.routing.total_budget import with_total_budget
from ttscale.running.runner import solve
from ttscale.runstore.storage import RunDir
from ttscale.runstore.writer import RunWriter
from ttscale.strategies.adaptive import AdaptiveParams

PROBE = ProbeSettings(n=2, max_tokens=48)


def test_the_probe_is_charged_to_the_problem_and_the_policy_choice_runs(tmp_path: Path) -> None:
    path = synthetic_policy(tmp_path, probe=PROBE)
    policy = Policy.load(path)
    prepared = prepared_for("adaptive", 2000, params={"policy": str(path)})
    sim = SeededSimulator(seed=4)
    record = asyncio.run(solve(prepared, sim, prepared.problems[0])).to_json()
    assert record["error"] is None
    ledger, info = record["ledger"], record["info"]
    probe_request = sim.requests[0]
    assert (probe_request["n"], probe_request["max_tokens"]) == (PROBE.n, PROBE.max_tokens)
    # The probe's own tokens, in the problem's ledger, and part of what it spent.
    assert 0 < ledger["probe"]["spent"] == info["probe"]["spent"] <= PROBE.n * PROBE.max_tokens
    assert ledger["generated_tokens"] == sim.generated_tokens == ledger["spent"] <= 2000
    assert ledger["generated_tokens"] > ledger["probe"]["spent"]  # the chosen strategy spent the rest
    row = policy.row(2000 - ledger["probe"]["spent"])
    assert info["row"] == row == 1024.0
    strategy, params = policy.choice(info["bin"], row)
    assert info["choice"] == {"strategy": strategy, "params": params}
    assert all(r["max_tokens"] == int(params["max_tokens"]) for r in sim.requests[1:])


def test_without_room_for_any_policy_budget_the_probe_answers(tmp_path: Path) -> None:
    prepared = prepared_for("adaptive", 200, params={"policy": str(synthetic_policy(tmp_path, probe=PROBE))})
    sim = SeededSimulator(seed=2)
    record = asyncio.run(solve(prepared, sim, prepared.problems[0])).to_json()
    assert record["info"]["choice"] == "probe" and record["info"]["row"] is None
    assert len(sim.requests) == 1 and record["prediction"] == record["info"]["probe"]["prediction"]


def test_params_are_validated_before_any_engine_starts(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot read policy"):
        parse_params(AdaptiveParams, {"policy": str(tmp_path / "missing.json")})
    with pytest.raises(ValueError, match="oracle-bin policy"):
        parse_params(AdaptiveParams, {"policy": str(synthetic_policy(tmp_path, bins="oracle"))})
    with pytest.raises(ValueError, match="a strategy adaptive may route to"):
        parse_params(AdaptiveParams, {"fallback": "compute_optimal"})
    loop = synthetic_policy(tmp_path, candidates={c: {"strategy": "adaptive", "params": {}} for c in "ABC"})
    with pytest.raises(ValueError, match="chooses adaptive, which adaptive cannot route to"):
        parse_params(AdaptiveParams, {"policy": str(loop)})


def test_a_changed_policy_file_changes_the_run_identity(tmp_path: Path) -> None:
    path = synthetic_policy(tmp_path, probe=PROBE)
    before = prepared_for("adaptive", 1000, params={"policy": str(path)}).identity()
    data = json.loads(path.read_text())
    data["policy"]["3"]["budgets"]["256"]["choice"]["params"]["max_tokens"] = "40"
    path.write_text(json.dumps(data))
    after = prepared_for("adaptive", 1000, params={"policy": str(path)}).identity()
    assert before["params"]["digest"] != after["params"]["digest"]


PROBLEMS = ArithmeticTask(levels=(1, 2, 3, 4, 5), per_level=4).problems()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(total=st.integers(1, 6000), per_problem=st.integers(1, 3000), count=st.integers(1, 20),
       concurrency=st.integers(1, 20), seed=st.integers(0, 1000), routed=st.booleans(),
       p_correct=st.floats(0.0, 1.0))
def test_a_total_budget_is_never_exceeded(
    total: int, per_problem: int, count: int, concurrency: int, seed: int, routed: bool, p_correct: float
) -> None:
    """On the SIMULATED policy, through the run pipeline's own `execute`: the pool caps the sum over problems."""
    with tempfile.TemporaryDirectory() as tmp:
        params: dict[str, Any] = {"policy": str(synthetic_policy(Path(tmp), probe=PROBE))} if routed else {}
        base = prepared_for("adaptive", per_problem, params=params, problems=PROBLEMS[:count],
                            concurrency=concurrency)
        prepared = with_total_budget(base, Budget(limit=total), problems=count)
        sim = SeededSimulator(seed=seed, p_correct=p_correct)
        run_dir = RunDir(Path(tmp) / "run")

        async def go() -> dict[str, Any]:
            with RunWriter(run_dir, prepared, stored={}) as writer:
                return await execute(sim, writer, progress=False)

        summary = asyncio.run(go())
        records = run_dir.records()
    pool = prepared.pool  # made by `execute` for the problems it ran
    assert pool is not None
    assert summary["problems"] == count and not any(r["error"] for r in records)
    assert pool.spent <= total and pool.reserved == 0
    assert pool.spent == sum(r["ledger"]["spent"] for r in records) == sim.generated_tokens
    assert all(r["ledger"]["spent"] <= per_problem for r in records)
    assert all(r["ledger"]["probe"]["spent"] <= PROBE.n * PROBE.max_tokens or not routed for r in records)


def test_a_total_budget_moves_compute_to_where_the_policy_says_it_pays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIMULATED: each problem's bin is planted (its level), so where the grants go is the allocator's doing alone.

    The synthetic policy's curves: bin 1 is nearly saturated at 256 tokens, bins 3 and 4 gain most from 1024, and
    bin 5 is hopeless (0 at every budget). With 700 tokens a problem on average, compute must move from bins 1–2
    to bins 3–4, and bin 5 must get nothing beyond its probe; with plenty, nothing needs to move.
    """
    path = synthetic_policy(tmp_path, probe=PROBE)
    curves = Policy.load(path).curves()
    assert all(a == 0 for _, a in curves[5]) and any(a > 0 for _, a in curves[3])  # what the set-up relies on
    planted = {p.id: p.level for p in PROBLEMS}
    monkeypatch.setattr(Policy, "bin_of", lambda self, features, *, problem_id="": planted[problem_id])

    def grants(total: int) -> tuple[dict[int, list[float]], list[dict[str, Any]]]:
        base = prepared_for("adaptive", 5000, params={"policy": str(path)}, problems=PROBLEMS)
        prepared = with_total_budget(base, Budget(limit=total), problems=len(PROBLEMS))
        sim = SeededSimulator(seed=9, p_correct=0.5)
        records = [asyncio.run(solve(prepared, sim, p)).to_json() for p in PROBLEMS]
        assert prepared.pool is not None and prepared.pool.spent <= total
        by_bin: dict[int, list[float]] = {}
        for r in records:
            k, granted = r["info"]["bin"], r["info"]["granted"]
            assert k == planted[r["id"]] and granted in {b for b, _ in curves[k]}  # a policy budget, or 0
            # The grant binds: what the chosen strategy spent after the probe never passes it.
            assert r["ledger"]["spent"] - r["ledger"]["probe"]["spent"] <= granted
            by_bin.setdefault(k, []).append(granted)
        return by_bin, records

    scarce, records = grants(20 * 700)
    assert scarce[5] == [0.0] * 4 and all(r["info"]["choice"] == "probe" for r in records if r["info"]["bin"] == 5)
    mean = {k: sum(v) / len(v) for k, v in scarce.items()}
    assert min(mean[3], mean[4]) > max(mean[1], mean[2])  # where the curves say compute pays
    plenty, _ = grants(20 * 1200)
    assert plenty[5] == [0.0] * 4  # hopeless whatever the total: compute that buys nothing is never taken
    assert all(g == 1024.0 for k in (1, 2, 3, 4) for g in plenty[k])  # nothing scarce, nothing moved


@pytest.mark.slow
def test_total_budget_on_the_real_engine(sync_engine: Any, tmp_path: Path) -> None:
    """A tiny real run: six problems share 1,500 tokens; probes are in each ledger; the total holds."""
    path = synthetic_policy(tmp_path, probe=ProbeSettings(n=2, max_tokens=32))
    problems = ArithmeticTask(levels=(1, 3, 5), per_level=2).problems()
    base = prepared_for("adaptive", 1000, params={"policy": str(path)}, problems=problems)
    prepared = with_total_budget(base, Budget(limit=1500), problems=len(problems))
    run_dir = RunDir(tmp_path / "run")

    async def go() -> dict[str, Any]:
        with RunWriter(run_dir, prepared, stored={}) as writer:
            return await execute(sync_engine.engine, writer, progress=False)

    summary = sync_engine.loop.run(go())
    records = run_dir.records()
    pool = prepared.pool
    assert pool is not None
    assert summary["problems"] == 6 and not any(r["error"] for r in records)
    assert pool.spent == sum(r["ledger"]["spent"] for r in records) <= 1500
    for r in records:
        assert 0 < r["ledger"]["probe"]["spent"] <= 2 * 32
        assert r["ledger"]["generated_tokens"] >= r["ledger"]["probe"]["spent"]
        assert r["info"]["granted"] is not None


def test_a_routed_strategy_gets_the_task_defaults_its_sweep_cell_ran_with(tmp_path: Path) -> None:
    from ttscale.budget import Budget
    from ttscale.evals import load_task
    from ttscale.strategies import STRATEGIES
    from ttscale.strategies.adaptive import routed_params

    data = tmp_path / "math.jsonl"
    data.write_text('{"question": "1/2 + 1/2?", "answer": "1"}\n', encoding="utf-8")
    math, fn = load_task(f"jsonl:{data}"), STRATEGIES.get("best_of_n")
    # The sweep cell at budget 512 ran max_tokens = min(2048, 512); the policy's own n stays.
    p = routed_params(fn, {"n": "2"}, task=math, budget=Budget(limit=512))
    assert (p.n, p.max_tokens) == (2, 512)
    assert routed_params(fn, {"max_tokens": "64"}, task=math, budget=Budget(limit=4096)).max_tokens == 64
    assert routed_params(fn, {}, task=load_task("arithmetic"), budget=Budget(limit=4096)).max_tokens == 256
    assert routed_params(fn, {}, task=None, budget=Budget(limit=4096)).max_tokens == 256  # no suggestions asked


def test_adaptive_passes_task_suggestions_on_only_for_runs_and_policies_made_with_them(tmp_path: Path) -> None:
    from ttscale.running.runner import RunSpec, prepare

    data = tmp_path / "math.jsonl"
    data.write_text('{"question": "1/2 + 1/2?", "answer": "1"}\n', encoding="utf-8")
    spec = RunSpec(strategy="adaptive", task=f"jsonl:{data}")
    assert prepare(spec).params.task_defaults is True  # a new run
    assert prepare(spec, task_defaults=False).params.task_defaults is False  # a resumed run made before them
    assert prepare(spec).identity()["params"]["task_defaults"] is True  # a resume compares it
