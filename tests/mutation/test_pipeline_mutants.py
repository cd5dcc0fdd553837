"""ttscale.pipeline and its writer (ttscale.runstore.writer) on the SIMULATED policy (issue 60): a total-budget
run cut off after some problems and resumed, a finished run resumed, and the flags and counts summary.json holds for
new, resumed and finished runs. Every expectation is computed here from the run's own records (what a killed run
leaves: results.jsonl's finished lines, no summary.json)."""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import ttscale
import ttscale.engine
import ttscale.running.runner
from ttscale.pipeline import carry_out
from ttscale.running.run_spec import RunSpec
from ttscale.runstore.names import ENGINE_LOG
from ttscale.runstore.storage import RunDirError
from ttscale.testing import SimulatedArithmeticPolicy

TASK = "arithmetic:1-2"


def run(out: Path, **kwargs: Any) -> Any:
    settings: dict[str, Any] = {"strategy": "sc", "budget": "256", "params": {"n": 2}, "task": TASK, "limit": 4}
    settings.update(kwargs)
    return ttscale.run(out=out, engine=SimulatedArithmeticPolicy(seed=1), **settings)


def lines(out: Path) -> list[str]:
    return (out / "results.jsonl").read_text().splitlines()


def spent(records: list[dict[str, Any]]) -> float:
    return sum(float(r["ledger"]["spent"]) for r in records)


def cut_off(out: Path, keep: int) -> list[str]:
    """What a run killed after `keep` problems leaves: those records, no summary.json."""
    kept = lines(out)[:keep]
    (out / "results.jsonl").write_text("".join(line + "\n" for line in kept))
    (out / "summary.json").unlink()
    return kept


@pytest.fixture
def pools(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The total budget's pool and the problems left, as each call of the runner found them."""
    seen: list[dict[str, Any]] = []
    solve = ttscale.running.runner.solve_problems

    async def spy(prepared: Any, todo: Any, *args: Any, **kwargs: Any) -> Any:
        pool = prepared.pool
        seen.append({"spent": None if pool is None else pool.spent,
                     "planned_for": None if pool is None else pool.extra.get("problems"),
                     "todo": [p.id for p in todo]})
        return await solve(prepared, todo, *args, **kwargs)

    monkeypatch.setattr(ttscale.running.runner, "solve_problems", spy)
    return seen


def test_a_cut_off_total_budget_run_resumes_with_its_spend_counted_and_the_total_kept(
    tmp_path: Path, pools: list[dict[str, Any]]
) -> None:
    out = tmp_path / "run"
    first = run(out, total_budget="600")
    assert first.summary["resumed"] is False and first.summary["total_budget"] == "600 tokens"
    everything = [json.loads(line) for line in lines(out)]
    assert first.summary["total_spent"] == spent(everything) <= 600
    kept = cut_off(out, 2)
    kept_records = [json.loads(line) for line in kept]
    done = run(out, total_budget="600")
    # The pool starts at what the kept problems spent, and plans for the two problems left, which alone run.
    left = sorted({r["id"] for r in everything} - {r["id"] for r in kept_records})
    assert pools[-1]["spent"] == spent(kept_records) > 0
    assert pools[-1]["planned_for"] == 2 and sorted(pools[-1]["todo"]) == left
    after = lines(out)
    assert after[:2] == kept and len(after) == 4  # the finished problems are not run again
    records = [json.loads(line) for line in after]
    assert done.summary["total_spent"] == spent(records) <= 600
    assert done.summary["resumed"] is True and done.summary["problems"] == 4
    assert done.summary["total_budget"] == "600 tokens"


def test_a_per_problem_run_has_no_pool_and_no_total_in_its_summary(tmp_path: Path,
                                                                   pools: list[dict[str, Any]]) -> None:
    done = run(tmp_path / "run")
    assert pools[-1]["spent"] is None and "total_budget" not in done.summary and "total_spent" not in done.summary


def test_a_finished_run_resumed_starts_no_engine_and_writes_the_same_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "run"
    first = run(out, total_budget="600").summary
    before = lines(out)

    async def refused(config: Any) -> Any:
        raise AssertionError("a finished run starts no engine")

    monkeypatch.setattr(ttscale.engine, "start_engine", refused)
    again = ttscale.run(strategy="sc", budget="256", params={"n": 2}, task=TASK, limit=4, total_budget="600",
                        out=out).summary
    assert lines(out) == before
    assert again["resumed"] is True and first["resumed"] is False
    for key in ("problems", "correct", "accuracy", "total_spent", "total_generated_tokens", "unfinished"):
        assert again[key] == first[key], key
    # Its wall time is the earlier part's and this one's (nothing ran: about the same).
    assert again["wall_seconds"] >= first["wall_seconds"]
    assert json.loads((out / "summary.json").read_text()) == again


def test_a_resumed_run_counts_what_it_ran_and_what_it_found(tmp_path: Path) -> None:
    out = tmp_path / "run"
    run(out)
    kept = [json.loads(line) for line in cut_off(out, 1)]
    done = run(out).summary
    records = [json.loads(line) for line in lines(out)]
    assert records[0] == kept[0] and len(records) == 4
    assert done["problems"] == 4 and done["resumed"] is True and done["unfinished"] == 0
    assert done["correct"] == sum(bool(r.get("correct")) for r in records)
    assert done["total_generated_tokens"] == sum(r["ledger"]["generated_tokens"] for r in records)


# -- carry_out's own choices: the stored parameters, where a run goes, what it refuses, its engine's setting -------

class Watching(SimulatedArithmeticPolicy):
    """The simulated policy, noting vLLM's logging level as each request sees the environment."""

    def __init__(self) -> None:
        super().__init__(seed=1)
        self.levels: set[str | None] = set()

    async def generate(self, prompt: Any, params: Any, *, seed: int | None = None) -> Any:
        self.levels.add(os.environ.get("VLLM_LOGGING_LEVEL"))
        return await super().generate(prompt, params, seed=seed)


def spec(**kwargs: Any) -> RunSpec:
    settings: dict[str, Any] = {"strategy": "self_consistency", "task": TASK, "budget": "256", "limit": 3,
                                "params": {"n": 3}}
    settings.update(kwargs)
    return RunSpec(**settings)


def test_a_resumed_spec_without_params_takes_the_stored_ones(tmp_path: Path) -> None:
    out = tmp_path / "run"
    carry_out(spec(), out=out, engine=SimulatedArithmeticPolicy(seed=1), resume=False)
    cut_off(out, 1)
    # The spec made over the stored one drops its params: the run resumed is still the stored run (n = 3), not
    # one with today's defaults, which its identity would refuse.
    seen: list[Any] = []

    def over(stored: RunSpec | None) -> RunSpec:
        seen.append(stored)
        assert stored is not None
        return replace(stored, params={})

    done = carry_out(over, out=out, engine=SimulatedArithmeticPolicy(seed=1), resume=True)
    assert seen[0] is not None and seen[0].params["n"] in (3, "3")
    records = [json.loads(line) for line in lines(out)]
    assert done.summary["problems"] == 3 and all(r["ledger"]["samples"] == 3 for r in records if r["ledger"]["calls"])
    # A param given on the resume goes over the stored one under its own name (its alias too): a different run.
    def two(stored: RunSpec | None) -> RunSpec:
        assert stored is not None
        return replace(stored, params={"n": 2})

    with pytest.raises(RunDirError, match="the run differs"):
        carry_out(two, out=out, engine=SimulatedArithmeticPolicy(seed=1), resume=True)


def test_a_spec_made_over_the_stored_one_needs_the_folder(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=re.escape("a spec made over the stored run's needs out= (the run to read "
                                                   "it from)")):
        carry_out(lambda stored: spec(), engine=SimulatedArithmeticPolicy(seed=1))


def test_a_run_without_a_folder_goes_under_runs_named_by_its_spec(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    done = carry_out(spec(task="arithmetic:1-2"), engine=SimulatedArithmeticPolicy(seed=1))
    assert done.path.parent == Path("runs")
    assert done.path.name.startswith("self_consistency-arithmetic-1-2-256-")
    assert (tmp_path / done.path / "summary.json").is_file()


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"total_budget": "600"}, "a total budget needs one process (its pool ledger is in memory): drop distributed="),
    ({"backend": "openai", "server": "served"},
     "distributed= starts vLLM engines; it does not apply to a served model (backend openai)"),
])
def test_what_ray_workers_cannot_run_is_refused_before_anything_starts(tmp_path: Path, kwargs: dict[str, Any],
                                                                       message: str) -> None:
    from ttscale.engine.openai import OpenAIConfig
    from ttscale.running.distributed import DistributedConfig

    if kwargs.get("server"):
        served = OpenAIConfig(base_url="http://127.0.0.1:9/v1", model="served", tokenizer="embedded")
        kwargs = {**kwargs, "server": served}
    out = tmp_path / "run"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        carry_out(spec(**kwargs), out=out, distributed=DistributedConfig(workers=1))
    assert not out.exists()
    with pytest.raises(ValueError, match="engine= is for a run in this process"):
        carry_out(spec(), out=out, distributed=DistributedConfig(workers=1), engine=SimulatedArithmeticPolicy(seed=1))


def test_the_engine_runs_with_vllm_s_info_logging_unless_set_and_only_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VLLM_LOGGING_LEVEL", raising=False)
    engine = Watching()
    carry_out(spec(), out=tmp_path / "a", engine=engine)
    assert engine.levels == {"INFO"} and "VLLM_LOGGING_LEVEL" not in os.environ
    monkeypatch.setenv("VLLM_LOGGING_LEVEL", "DEBUG")
    engine = Watching()
    carry_out(spec(), out=tmp_path / "b", engine=engine)
    assert engine.levels == {"DEBUG"}


def test_an_engine_started_here_writes_to_the_run_s_log_unless_verbose(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    async def simulated(config: Any) -> SimulatedArithmeticPolicy:
        return SimulatedArithmeticPolicy(seed=1)

    monkeypatch.setattr(ttscale.engine, "start_engine", simulated)
    quiet = carry_out(spec(), out=tmp_path / "quiet")
    assert (quiet.path / ENGINE_LOG).is_file()
    loud = carry_out(spec(), out=tmp_path / "loud", verbose=True)
    assert not (loud.path / ENGINE_LOG).exists()
    given = carry_out(spec(), out=tmp_path / "given", engine=SimulatedArithmeticPolicy(seed=1))
    assert not (given.path / ENGINE_LOG).exists()  # an engine given: its output is the caller's


# -- an engine that fails a new run ----------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["engine", "ours"])
def test_an_engine_that_fails_a_new_run_leaves_its_log_named_in_one_line(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch,
                                                                         kind: str) -> None:
    from ttscale.running.launch import EngineStartError

    async def failing(config: Any) -> Any:
        print("CUDA out of memory while loading the weights", file=sys.stderr)  # what the engine says, to its log
        if kind == "engine":
            raise RuntimeError("Engine core initialization failed.  See root cause above.")
        raise ValueError("a check of ours")

    monkeypatch.setattr(ttscale.engine, "start_engine", failing)
    out = tmp_path / "run"
    if kind == "engine":
        with pytest.raises(EngineStartError) as caught:
            carry_out(spec(), out=out)
        message = str(caught.value)
        assert message.startswith("Engine core initialization failed. See root cause above. (the engine's log: ")
        kept = Path(message.rpartition("(the engine's log: ")[2].rstrip(")"))
        try:
            assert "CUDA out of memory" in kept.read_text()  # moved out of the run that was discarded
        finally:
            kept.unlink()
    else:  # ttscale's own refusal is not an engine's failure: raised as it is
        with pytest.raises(ValueError, match="a check of ours"):
            carry_out(spec(), out=out)
    assert not out.exists()  # a new run that finished nothing is removed
