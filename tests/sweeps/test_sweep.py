"""Sweeps: derived budgets equal direct runs, the directory flow, resume, and the CLI's refusals."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.adaptive.sim import GenRMReplayEngine, PoolReplayEngine, SeededSimulator, engine_config, prepared_for
from ttscale.cli import main
from ttscale.routing.policy import LearnOptions
from ttscale.running.runner import solve
from ttscale.runstore.storage import RESULTS, SUMMARY
from ttscale.sweeps import GridEntry, SweepSpec, cell_dir, create_sweep, run_sweep
from ttscale.sweeps.holdout import learn_from_sweep
from ttscale.sweeps.outcomes import load_results, outcomes
from ttscale.sweeps.replay import derive_record

ANSWERS = ["7", "8", "9", None]
LEDGER_KEYS = ("spent", "generated_tokens", "samples", "calls", "prompt_tokens", "capped_requests",
               "refused_requests", "reward_evaluations")


def text(answer: str | None) -> str:
    return "I am not sure." if answer is None else f"The answer is {answer}."


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    strategy=st.sampled_from(["best_of_n", "self_consistency", "self_consistency verifier=arithmetic"]),
    max_tokens=st.integers(4, 40),
    small=st.integers(1, 400),
    extra=st.integers(1, 600),
    n=st.one_of(st.none(), st.integers(1, 12)),
    refill=st.booleans(),
    pool=st.lists(st.tuples(st.integers(1, 40), st.sampled_from(ANSWERS), st.floats(-3, 0)), min_size=1,
                  max_size=150),
)
def test_a_derived_budget_is_exactly_what_a_run_at_that_budget_sees(
    strategy: str, max_tokens: int, small: int, extra: int, n: int | None, refill: bool,
    pool: list[tuple[int, str | None, float]],
) -> None:
    """A run draws the pool's samples in order (PoolReplayEngine): the derivation must agree with it exactly."""
    name, *rest = strategy.split()
    params: dict[str, Any] = dict(item.split("=") for item in rest)
    params |= {"max_tokens": str(max_tokens), "refill": str(refill and n is None).lower()}
    if n is not None:
        params["n"] = str(n)
    samples = [(length, text(a), lp) for length, a, lp in pool]
    big, low = prepared_for(name, small + extra, params=params), prepared_for(name, small, params=params)
    problem = big.problems[0]
    source = asyncio.run(solve(big, PoolReplayEngine(samples), problem)).to_json()
    derived = derive_record(low, problem, source, source_id="source-cell")
    engine = PoolReplayEngine(samples)
    direct = asyncio.run(solve(low, engine, problem)).to_json()
    if isinstance(derived, str):
        # Refused only when the run saw what the stored pool cannot give: truncated samples, or more of them.
        truncated = any(r.max_tokens < max_tokens for r in engine.requests)
        assert truncated or sum(r.n for r in engine.requests) > len(source["samples"]), derived
        return
    assert derived["info"].pop("derived_from") == "source-cell"
    for key in ("prediction", "correct", "samples", "info", "level", "reference"):
        assert derived[key] == direct[key], key
    for key in LEDGER_KEYS:
        assert derived["ledger"][key] == direct["ledger"][key], key
    assert derived["ledger"]["spent"] <= small


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small=st.integers(40, 900), extra=st.integers(1, 900), verifications=st.integers(1, 3),
       select=st.sampled_from(["best", "weighted"]),
       pool=st.lists(st.tuples(st.integers(1, 40), st.sampled_from(ANSWERS), st.just(-1.0)), min_size=1,
                     max_size=60))
def test_a_derived_genrm_budget_is_what_a_run_at_that_budget_sees(
    small: int, extra: int, verifications: int, select: str, pool: list[tuple[int, str | None, float]]
) -> None:
    """GenRM with V fixed: the first S_b solutions and their verdicts; with equal chains, prorated tokens are exact."""
    params = {"max_tokens": "40", "verifications": str(verifications), "verify_tokens": "16", "select": select}
    samples = [(length, text(a), lp) for length, a, lp in pool]
    big, low = prepared_for("genrm", small + extra, params=params), prepared_for("genrm", small, params=params)
    problem = big.problems[0]
    source = asyncio.run(solve(big, GenRMReplayEngine(samples), problem)).to_json()
    assert source["error"] is None, source["error"]
    derived = derive_record(low, problem, source, source_id="source-cell")
    engine = GenRMReplayEngine(samples)
    direct = asyncio.run(solve(low, engine, problem)).to_json()
    if isinstance(derived, str):
        # Refused only when the run wanted more solutions than the source holds, or when a verification
        # could have been cut to fit (the worst case of the chains and verdicts passes what the solutions left).
        s_b = direct["info"]["S"]
        left = small - sum(x["num_tokens"] for x in direct["samples"])
        assert s_b > len(source["samples"]) or s_b * verifications * (16 + 1) > left, derived
        return
    for key in ("prediction", "correct", "samples"):
        assert derived[key] == direct[key], key
    assert (derived["info"]["S"], derived["info"]["V"]) == (direct["info"]["S"], direct["info"]["V"])
    for key in ("spent", "generated_tokens"):
        assert derived["ledger"][key] == direct["ledger"][key], key
    assert derived["ledger"]["spent"] <= small and not direct["ledger"]["capped_requests"]


def test_grid_entries_and_cells() -> None:
    entry = GridEntry.parse("self_consistency max_tokens=48 temperature=0.6|1.0")
    assert entry.combos() == [{"max_tokens": "48", "temperature": "0.6"}, {"max_tokens": "48", "temperature": "1.0"}]
    with pytest.raises(ValueError, match="key=value"):
        GridEntry.parse("beam width")
    spec = SweepSpec(grid=(entry, GridEntry.parse("beam width=2")), budgets=("1k", "256", "512"), seeds=(0, 1))
    assert spec.budgets == ("256", "512", "1000")
    cells = spec.cells()
    assert len(cells) == 2 * 2 * 3 + 2 * 3  # (2 sc combos + 1 beam) × 3 budgets × 2 seeds
    sources = {c.id for c in cells if c.source is None and c.strategy == "self_consistency"}
    assert all(c.budget == "1000" for c in cells if c.id in sources)
    assert all(c.source in sources for c in cells if c.source)
    assert all(c.source is None for c in cells if c.strategy == "beam")  # a tree search runs at every budget
    assert len({c.id for c in cells}) == len(cells)
    assert [c.id for c in cells].index(cells[1].source or "") == 0  # a source comes before what it feeds
    with pytest.raises(ValueError, match="distinct"):
        SweepSpec(grid=(entry,), budgets=("1k", "1000"))
    assert all(c.source is None for c in SweepSpec(grid=(entry,), budgets=("1k", "2k"), subsample=False).cells())


def test_a_sweep_runs_each_pool_once_derives_the_rest_and_resumes(tmp_path: Path) -> None:
    spec = SweepSpec(grid=(GridEntry.parse("best_of_n max_tokens=40"),
                           GridEntry.parse("self_consistency max_tokens=40 temperature=0.6|1.0"),
                           GridEntry.parse("beam width=2 max_tokens=40")),
                     budgets=("80", "160", "320"), task="arithmetic:1-3", limit=6, engine=engine_config(tmp_path))
    root = tmp_path / "sweep"
    create_sweep(spec, root, command=["test"])
    with pytest.raises(ValueError, match="already holds a sweep"):
        create_sweep(spec, root)
    sim, log = SeededSimulator(seed=1), list[str]()
    asyncio.run(run_sweep(spec, root, engine=sim, progress=False, log=log.append))
    cells = spec.cells()
    assert not any(r.get("error") for c in cells for r in cell_dir(root, c).records())
    derived = [c for c in cells if c.source]
    assert len(derived) == 3 * 2 and sum(line.startswith("sweep: derived") for line in log) == 6
    # Only the three sources and the three beam cells asked the engine for samples.
    assert sum(line.startswith("sweep: running") for line in log) == 6
    for cell in derived:
        records = cell_dir(root, cell).records()
        assert len(records) == 6 and all(r["info"]["derived_from"] == cell.source for r in records)
        assert all(r["ledger"]["spent"] <= float(cell.budget) for r in records)
        config = json.loads((cell_dir(root, cell).path / "config.json").read_text())
        assert config["environment"]["engine"]["derived_from"] == cell.source
    results = load_results(root)
    rows, candidates = outcomes(results)
    assert len(candidates) == 4 and len(rows) == 4 * 3 * 6
    # Resume: nothing finished runs again; a damaged derived cell is re-derived without the engine.
    requests = len(sim.requests)
    victim = cell_dir(root, derived[0]).path
    (victim / SUMMARY).unlink()
    lines = (victim / RESULTS).read_text().splitlines(keepends=True)
    (victim / RESULTS).write_text("".join(lines[:2]) + lines[2][:10])
    log.clear()
    asyncio.run(run_sweep(spec, root, engine=sim, progress=False, log=log.append))
    assert len(sim.requests) == requests and log == [f"sweep: derived {derived[0].id} from {derived[0].source}"]
    assert len(cell_dir(root, derived[0]).records()) == 6
    policy = learn_from_sweep(root, options=LearnOptions(bins="predicted", n_bins=2), probe_n=2)
    assert policy["probe_source_cell"].startswith("best_of_n") and policy["difficulty"]["probe"]["max_tokens"] == 40
    assert policy["difficulty"]["predictor"]["features"]  # agreement at least
    assert set(policy["budgets"]) == {"80", "160", "320"}


def test_the_cli_refuses_bad_input_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sweep", "--budgets", "1k"]) == 2
    assert "--strategy" in capsys.readouterr().err
    model = engine_config(tmp_path).model
    assert main(["sweep", "--strategy", "best_of_n bogus=1", "--budgets", "1k", "--model", model,
                 "--out", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err
    assert "unknown parameter 'bogus'" in err and err.count("\n") == 1
    assert not (tmp_path / "s").exists()  # refused before anything was written
    for flag in (["--max-model-len", "10"], ["--gpu-memory-utilization", "2"], ["--engine-arg", "max_num_seqs=0"]):
        assert main(["sweep", "--strategy", "best_of_n", "--budgets", "1k", *flag,
                     "--out", str(tmp_path / "s")]) == 2, flag  # an engine setting out of range: usage, not a crash
        err = capsys.readouterr().err
        assert err.startswith("ttscale: error: sweep: ") and err.count("\n") == 1 and "ValueError" not in err, err
    assert not (tmp_path / "s").exists()
    for empty in ("", "  "):  # issue 43, item 15: said "not enough values to unpack"
        assert main(["sweep", "--strategy", "best_of_n", "--strategy", empty, "--budgets", "1k", "--model", model,
                     "--out", str(tmp_path / "s")]) == 2
        err = capsys.readouterr().err
        assert err == "ttscale: error: sweep: a --strategy is empty: give 'NAME key=v1|v2 ...'\n", err
    assert not (tmp_path / "s").exists()
    assert main(["policy", "--sweep", str(tmp_path / "nowhere")]) == 2
    assert "not a ttscale sweep" in capsys.readouterr().err
    assert main(["policy", "--sweep", str(tmp_path), "--folds", "1"]) == 2
    assert "folds must be ≥ 2, got 1" in capsys.readouterr().err


def test_a_config_file_and_the_served_backend_are_read_as_run_reads_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from ttscale.engine.openai import OpenAIConfig

    def refused(*argv: str) -> str:
        assert main(["sweep", *argv]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and not (tmp_path / "s").exists()
        return err

    config = tmp_path / "sweep.yaml"
    config.write_text("strategy: [best_of_n n=1|2]\nbudgets: [64, 128]\nlimt: 2\n")
    err = refused("--config", str(config))
    assert "sweep: in " in err and "unknown setting 'limt'; did you mean 'limit'?" in err
    assert "--base-url applies to --backend openai only" in refused("--strategy", "best_of_n", "--budgets", "64",
                                                                    "--base-url", "http://127.0.0.1:9/v1")
    assert "--backend openai needs --base-url" in refused("--strategy", "best_of_n", "--budgets", "64",
                                                          "--backend", "openai", "--model", "m")
    assert "drop --config" in refused("--resume", str(tmp_path), "--config", str(config))
    # The served model is part of the spec (sweep.json), its key never is: only the variable that holds it.
    server = OpenAIConfig(base_url="http://127.0.0.1:9/v1", model="served", tokenizer="embedded",
                          api_key_env="MY_KEY")
    spec = SweepSpec(grid=(GridEntry.parse("best_of_n n=1|2"),), budgets=("64",), backend="openai", server=server)
    again = SweepSpec.from_dict(json.loads(json.dumps(spec.to_dict())))
    assert again.server == server and again.run_spec(again.cells()[0]).engine_config() == server
    with pytest.raises(ValueError, match="backend must be vllm, or openai with a server"):
        SweepSpec(grid=spec.grid, budgets=("64",), backend="openai")


def test_a_genrm_s_v_grid_runs_its_largest_point_and_derives_the_rest() -> None:
    genrm = GridEntry.parse("genrm n=1|2|4 verifications=1|2 max_tokens=40")
    sc = GridEntry.parse("self_consistency n=1|2|4 max_tokens=40")
    cells = SweepSpec(grid=(genrm, sc), budgets=("2000",)).cells()
    ran = [c for c in cells if c.source is None]
    assert [(c.strategy, c.params.get("n"), c.params.get("verifications")) for c in ran] == [
        ("genrm", "4", "2"), ("self_consistency", "1", None), ("self_consistency", "2", None),
        ("self_consistency", "4", None)]
    derived = [c for c in cells if c.source]
    assert len(derived) == 5 and {c.source for c in derived} == {ran[0].id}
    assert [c.id for c in cells].index(ran[0].id) < min([c.id for c in cells].index(c.id) for c in derived)
    # Two budgets: still one genrm run (largest S, V at the largest budget); the 11 other points derived from it.
    cells = SweepSpec(grid=(genrm,), budgets=("1000", "2000")).cells()
    assert sum(c.source is None for c in cells) == 1 and len(cells) == 12


def test_best_at_compute_by_hand() -> None:
    from ttscale.sweeps.outcomes import best_at_compute

    def row(strategy: str, candidate: str, tokens: float, correct: int) -> dict[str, Any]:
        return {"strategy": strategy, "candidate": candidate, "budget": "2000", "seed": 0, "mean_tokens": tokens,
                "correct": correct, "problems": 30}

    rows = [row("self_consistency", "sc n=1", 100, 10), row("self_consistency", "sc n=4", 400, 18),
            row("genrm", "genrm n=1 v=1", 250, 12), row("genrm", "genrm n=2 v=2", 600, 20)]
    levels = best_at_compute(rows)
    assert [lv["tokens"] for lv in levels] == [100, 250, 400, 600]
    picks = [{k: b["candidate"] for k, b in lv["best"].items()} for lv in levels]
    assert picks == [{"self_consistency": "sc n=1"},
                     {"self_consistency": "sc n=1", "genrm": "genrm n=1 v=1"},
                     {"self_consistency": "sc n=4", "genrm": "genrm n=1 v=1"},
                     {"self_consistency": "sc n=4", "genrm": "genrm n=2 v=2"}]
    # 18/30: Wilson 95% interval [0.4232, 0.7541] (p = 0.6, z = 1.96, worked by hand).
    assert levels[2]["best"]["self_consistency"]["ci95"] == pytest.approx([0.4232, 0.7541], abs=2e-4)
    with pytest.raises(ValueError, match="problems ≥ 1"):
        best_at_compute([row("genrm", "g", 10, 0) | {"problems": 0}])


def test_an_s_v_sweep_compares_sc_and_genrm_on_ledger_tokens(tmp_path: Path) -> None:
    from ttscale.cli.sweep import format_matched
    from ttscale.sweeps.outcomes import best_at_compute, sweep_table

    spec = SweepSpec(grid=(GridEntry.parse("genrm n=1|2 verifications=1|2 max_tokens=40 verify_tokens=16"),
                           GridEntry.parse("self_consistency n=1|2|4 max_tokens=40")),
                     budgets=("600",), task="arithmetic:1-3", limit=4, engine=engine_config(tmp_path))
    root = tmp_path / "sweep"
    create_sweep(spec, root, command=["test"])
    log = list[str]()
    asyncio.run(run_sweep(spec, root, engine=SeededSimulator(seed=2), progress=False, log=log.append))
    assert sum(line.startswith("sweep: derived genrm") for line in log) == 3, log
    records = {c.id: cell_dir(root, c).records() for c in spec.cells()}
    top = next(c for c in spec.cells() if c.strategy == "genrm" and c.source is None)
    for cell in (c for c in spec.cells() if c.source):
        v = int(cell.params["verifications"])
        for rec, src in zip(records[cell.id], records[top.id], strict=True):
            s = rec["info"]["S"]
            # Exact verifier tokens: the first V chains (and their appended verdict tokens) of the first S solutions.
            expected = sum(t + k for chains in src["info"]["chains"][:s] for _, t, k, _ in chains[:v])
            assert rec["ledger"]["verifier"]["generated_tokens"] == expected
            assert rec["ledger"]["generated_tokens"] == expected + sum(x["num_tokens"] for x in rec["samples"])
    table = sweep_table(load_results(root))
    matched = best_at_compute(table)
    for level in matched:
        assert all(b["mean_tokens"] <= level["tokens"] for b in level["best"].values())
    assert set(matched[-1]["best"]) == {"genrm", "self_consistency"}
    assert "best at matched compute" in format_matched(matched)


def _sweep_a_pool_under_a_lower_cap(tmp_path: Path) -> tuple[SweepSpec, Path, list[str], PoolReplayEngine]:
    """A MATH-style task's sweep at 1024 and 8192 (max_tokens 2048 capped at each budget), run on a replayed pool:
    the 1024 cell samples under a lower cap than its 8192 source. Returns the spec, the folder, the log, the engine."""
    data = tmp_path / "math.jsonl"
    data.write_text('{"question": "1/2 + 1/2?", "answer": "1"}\n', encoding="utf-8")
    spec = SweepSpec(grid=(GridEntry.parse("self_consistency"),), budgets=("1024", "8192"), task=f"jsonl:{data}",
                     engine=engine_config(tmp_path))
    root = tmp_path / "sw"
    create_sweep(spec, root, command=["test"])
    lines: list[str] = []
    engine = PoolReplayEngine([(1500, "The answer is \\boxed{1}.", -0.1)] * 40)
    asyncio.run(run_sweep(spec, root, engine=engine, progress=False, log=lines.append))
    return spec, root, lines, engine


def test_a_cell_whose_parameters_differ_from_its_source_is_run_not_derived(tmp_path: Path) -> None:
    # A MATH-style task suggests max_tokens 2048, capped at each budget: the 1024 cell samples with a lower cap
    # than the 8192 pool, so replaying the pool would hand it samples longer than it may draw.
    spec, root, lines, engine = _sweep_a_pool_under_a_lower_cap(tmp_path)
    low = next(c for c in spec.cells() if c.budget == "1024")
    assert any("cannot be derived (the source ran with other parameters (max_tokens: 2048 vs 1024))" in line
               for line in lines)
    config = json.loads((cell_dir(root, low).path / "config.json").read_text())
    assert config["identity"]["params"]["max_tokens"] == 1024 and "derived_from" not in config["environment"]["engine"]
    assert all(r.max_tokens <= 1024 for r in engine.requests[-1:])


def test_a_sweep_made_before_task_defaults_keeps_running_without_them(tmp_path: Path) -> None:
    data = tmp_path / "math.jsonl"
    data.write_text('{"question": "1/2 + 1/2?", "answer": "1"}\n', encoding="utf-8")
    spec = SweepSpec(grid=(GridEntry.parse("self_consistency"),), budgets=("4096",), task=f"jsonl:{data}",
                     engine=engine_config(tmp_path))
    stored = spec.to_dict()
    assert stored["task_defaults"] is True
    del stored["task_defaults"]  # sweep.json as written before them
    old = SweepSpec.from_dict(stored)
    from ttscale.sweeps import prepare_cell

    assert prepare_cell(old, old.cells()[0], tmp_path).params.max_tokens == 256
    assert prepare_cell(spec, spec.cells()[0], tmp_path).params.max_tokens == 2048


def test_a_thinking_budget_sweep_replays_chains_that_ended_within_a_budget(tmp_path: Path) -> None:
    # SIMULATED policy: its chains end by themselves (EOS) after 20-90 tokens, so at a thinking budget of 48
    # some problems' chains all ended within it (replayed from the 512 cell) and the others are run afresh.
    spec = SweepSpec(grid=(GridEntry.parse("budget_forcing thinking_budget=48|512 answer_tokens=24 n=2"),),
                     budgets=("2k",), task="arithmetic:1-3", limit=8, engine=engine_config(tmp_path))
    root = tmp_path / "sweep"
    create_sweep(spec, root, command=["test"])
    sim, log = SeededSimulator(seed=3), list[str]()
    asyncio.run(run_sweep(spec, root, engine=sim, progress=False, log=log.append))
    top, small = spec.cells()
    assert top.params["thinking_budget"] == "512" and small.source == top.id
    source = {r["id"]: r for r in cell_dir(root, top).records()}
    records = cell_dir(root, small).records()
    assert len(records) == 8 and not any(r.get("error") for r in records)
    replayed = [r for r in records if r["info"].get("derived_from") == top.id]
    fresh = [r for r in records if "derived_from" not in r["info"]]
    assert replayed and fresh, log  # this seed gives both kinds
    for r in replayed:  # exactly the source's chains, each of which ended within 48 tokens
        assert r["samples"] == source[r["id"]]["samples"]
        assert all(c["ended_at"] is not None and c["thinking_tokens"] <= 48 for c in r["info"]["chains"])
    for r in fresh:  # some chain of the source thought past 48: this budget needs its own answer
        assert any(c["thinking_tokens"] > 48 for c in source[r["id"]]["info"]["chains"])
    assert all(c["thinking_tokens"] <= 48 for r in records for c in r["info"]["chains"])
    assert all(r["info"]["thinking_budget"] == 48 for r in records)
    summary = json.loads((cell_dir(root, small).path / SUMMARY).read_text())
    assert summary["problems"] == 8
    assert any("need their own run" in line for line in log)


def test_the_cli_runs_resumes_and_refuses_through_the_api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """`ttscale sweep` is ttscale.api.sweep with flags: engines started per seed (here SIMULATED), the table printed."""
    import ttscale.engine

    started: list[Any] = []

    async def start_engine(config: Any) -> SeededSimulator:
        started.append(config)
        return SeededSimulator(seed=1)

    monkeypatch.setattr(ttscale.engine, "start_engine", start_engine)
    model, out = str(engine_config(tmp_path).model), str(tmp_path / "s")
    argv = ["sweep", "--strategy", "best_of_n n=2 max_tokens=40", "--budgets", "200,400", "--seeds", "0,3",
            "--task", "arithmetic:1-3", "--limit", "3", "--model", model, "--engine-arg", "max_num_seqs=8",
            "--kv-cache-gib", "3", "--out", out, "--no-progress", "--json"]
    assert main(argv) == 0
    printed = json.loads(capsys.readouterr().out)
    assert sorted((c["budget"], c["seed"], c["derived_from"] is None) for c in printed["cells"]) == [
        ("200", 0, False), ("200", 3, False), ("400", 0, True), ("400", 3, True)]
    assert [(c.model, c.seed, c.max_num_seqs, c.kv_cache_gib) for c in started] == [(model, 0, 8, 3), (model, 3, 8, 3)]
    stored = json.loads((tmp_path / "s" / "sweep.json").read_text())
    assert stored["command"] == sys.argv and stored["spec"]["engine"]["max_num_seqs"] == 8
    assert main(["sweep", "--resume", out, "--no-progress", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == printed and len(started) == 2  # finished: no engine started
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{out!r} already holds a sweep: continue it with --resume" in err and err.count("\n") == 1
    assert main(["sweep", "--resume", str(tmp_path / "nowhere")]) == 2
    assert "not a ttscale sweep" in capsys.readouterr().err
    # --backend openai: the served model's settings become the sweep's server, one start for its one seed.
    served = ["sweep", "--backend", "openai", "--base-url", "http://127.0.0.1:9/v1", "--model", "served",
              "--tokenizer", model, "--chat-template-kwargs", "enable_thinking=false", "--strategy", "best_of_n n=1",
              "--budgets", "400", "--task", "arithmetic:1-3", "--limit", "2", "--out", str(tmp_path / "o"),
              "--no-progress", "--json"]
    assert main(served) == 0 and len(json.loads(capsys.readouterr().out)["cells"]) == 1
    server = started[-1]
    assert len(started) == 3 and (server.model, server.chat_template_kwargs) == ("served", {"enable_thinking": False})
    assert json.loads((tmp_path / "o" / "sweep.json").read_text())["spec"]["backend"] == "openai"


def test_a_sweeps_stored_command_masks_credentials(tmp_path: Path) -> None:
    spec = SweepSpec(grid=(GridEntry.parse("self_consistency max_tokens=40"),), budgets=("80",),
                     task="arithmetic:1-3", limit=2, engine=engine_config(tmp_path))
    url = "http://user:pw@127.0.0.1:9/v1?api_key=SEKRET-77"
    create_sweep(spec, tmp_path / "sweep", command=["ttscale", "sweep", "--base-url", url])
    text = (tmp_path / "sweep" / "sweep.json").read_text()
    assert "SEKRET-77" not in text and ":pw@" not in text
    assert json.loads(text)["command"][-1] == "http://***@127.0.0.1:9/v1?api_key=***"


def test_a_served_sweep_stores_no_secret_and_continues_only_on_its_own_model(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """sweep.json keeps a served model's URL as config.json does (no user:password, query values masked); the sweep
    continues from the URL given again (`--resume DIR --base-url`, `server=`), and never on another model."""
    from dataclasses import replace

    import ttscale
    import ttscale.engine
    from ttscale.engine.openai import OpenAIConfig

    started: list[Any] = []

    async def start_engine(config: Any) -> SeededSimulator:
        started.append(config)
        return SeededSimulator(seed=1)

    monkeypatch.setattr(ttscale.engine, "start_engine", start_engine)
    server = OpenAIConfig(base_url="http://user:pw@127.0.0.1:9/v1?api_key=SEKRET-77", model="served",
                          tokenizer=str(engine_config(tmp_path).model))
    spec = SweepSpec(grid=(GridEntry.parse("best_of_n n=1 max_tokens=40"),), budgets=("400",), task="arithmetic:1-3",
                     limit=2, backend="openai", server=server)
    root = tmp_path / "sweep"
    create_sweep(spec, root, command=["ttscale", "sweep"])
    text = (root / "sweep.json").read_text()
    assert "SEKRET-77" not in text and ":pw@" not in text
    assert json.loads(text)["spec"]["server"]["base_url"] == "http://127.0.0.1:9/v1?api_key=***"
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    refusal = f"{str(root)!r} holds a sweep of openai model 'served': it continues on that model, not on openai " \
              "model 'other' (pick another out for another model)"
    assert main(["sweep", "--resume", str(root), "--model", "other", "--no-progress"]) == 2
    assert capsys.readouterr().err.strip() == f"ttscale: error: sweep: {refusal}"
    for call in (dict(), dict(strategies=["best_of_n n=1 max_tokens=40"], budgets=["400"], task="arithmetic:1-3",
                              limit=2)):
        with pytest.raises(ValueError) as refused:
            ttscale.sweep(out=root, server=replace(server, model="other"), **call)  # type: ignore[arg-type]
        assert str(refused.value) == refusal
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before and started == []
    # The URL given again, with its secrets (masked in sweep.json): the sweep's cells are served from there.
    again = "http://user:pw@127.0.0.1:8/v1?api_key=SEKRET-78"
    assert main(["sweep", "--resume", str(root), "--base-url", again, "--no-progress", "--json"]) == 0
    assert [(s.base_url, s.model) for s in started] == [(again, "served")]
    assert len(json.loads(capsys.readouterr().out)["cells"]) == 1


def test_the_table_says_a_cell_that_could_not_be_derived_was_run(tmp_path: Path) -> None:
    # Issue 49: the table labelled a cell "derived" (it had a source) while the log said "cannot be derived; running
    # it". The 1024 cell samples under a lower max_tokens than its 8192 source, so it runs.
    from ttscale.cli.sweep import _format
    from ttscale.sweeps.outcomes import sweep_table

    _, root, lines, _ = _sweep_a_pool_under_a_lower_cap(tmp_path)
    assert any("cannot be derived" in line for line in lines)
    rows = sweep_table(load_results(root))
    low = next(r for r in rows if r["budget"] == "1024")
    assert low["derived_from"] is None and low["derived_problems"] == 0
    assert [line.split()[-1] for line in _format(rows).splitlines()[1:]] == ["run", "run"]


def test_the_table_says_how_many_problems_a_partly_replayed_cell_derived(tmp_path: Path) -> None:
    from ttscale.cli.sweep import _format
    from ttscale.sweeps.outcomes import sweep_table

    spec = SweepSpec(grid=(GridEntry.parse("budget_forcing thinking_budget=48|512 answer_tokens=24 n=2"),),
                     budgets=("2k",), task="arithmetic:1-3", limit=8, engine=engine_config(tmp_path))
    root = tmp_path / "sweep"
    create_sweep(spec, root, command=["test"])
    asyncio.run(run_sweep(spec, root, engine=SeededSimulator(seed=3), progress=False))
    rows = sweep_table(load_results(root))
    small = next(r for r in rows if r["derived_from"])
    replayed = sum("derived_from" in r["info"] for r in cell_dir(root, spec.cells()[1]).records())
    assert 0 < small["derived_problems"] == replayed < 8
    assert f"derived {replayed} of 8, run the rest" in _format(rows)


def test_grid_cells_that_run_the_same_are_refused_before_the_sweeps_folder_exists(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An alias beside its name, or a default written out, makes a cell the grid already has: it would run twice."""
    out = tmp_path / "s"
    for grid, said in (
        (["self_consistency n=2|4", "sc n=4"], "grid cells 'self_consistency n=4' and 'self_consistency n=4' run the "
                                               "same (self_consistency "),
        (["sc", "self_consistency temperature=0.8"], "grid cells 'self_consistency' and 'self_consistency "
                                                     "temperature=0.8' run the same (self_consistency "),
    ):
        argv = [a for text in grid for a in ("--strategy", text)]
        assert main(["sweep", *argv, "--budgets", "64,128", "--limit", "2", "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and said in err and "seed 0): each cell must differ; drop one from" in err, err
        assert not out.exists()
    # Cells that differ make a sweep (its folder and sweep.json: no engine starts before `run_sweep`); the same
    # strategy and parameters at another budget or seed are other cells.
    create_sweep(SweepSpec(grid=(GridEntry.parse("sc n=2|4"), GridEntry.parse("best_of_n n=4")), budgets=("64", "128"),
                           seeds=(0, 1), limit=2), out)
    assert len(json.loads((out / "sweep.json").read_text())["cells"]) == 3 * 2 * 2
