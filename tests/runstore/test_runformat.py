"""Versioned run files (ttscale.runstore.runformat): today's code stamps config.json and every record with format 3, and
reads the REAL run directories the code wrote before versions existed (tests/fixtures/runs_v1, format 1) in
today's shape: load_runs, report, fit, and a resume that finds nothing left (and starts no engine). What a reader
gets no longer carries the version: a record reads back as it was appended, whatever version wrote its line.

The fixtures are never written to: each test copies the one it uses into its tmp_path first.
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path
from typing import Any

import pytest

import ttscale
from ttscale.cli import main
from ttscale.engine.base import EngineConfig
from ttscale.running.runner import RunSpec, prepare
from ttscale.runstore.run_config import check_resume, new_config
from ttscale.runstore.runformat import FORMAT_VERSION, RunFormatError, migrate_config, migrate_record, stamp_record
from ttscale.runstore.runs import RunLoadError, read_run
from ttscale.runstore.storage import CONFIG, RESULTS, RunDir, RunDirError
from ttscale.testing.policy import SimulatedArithmeticPolicy

V1 = Path(__file__).resolve().parents[1] / "fixtures" / "runs_v1"
RUNS = ("self_consistency", "best_of_n", "beam", "sleep_time", "cli_self_consistency")
"""The single-run fixtures (the sweep's cells are runs too: see the sweep tests)."""


def copy(name: str, to: Path) -> Path:
    return Path(shutil.copytree(V1 / name, to / name))


def raw_lines(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / RESULTS).read_text(encoding="utf-8").splitlines()]


def raw_config(run: Path) -> dict[str, Any]:
    result: dict[str, Any] = json.loads((run / CONFIG).read_text(encoding="utf-8"))
    return result


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


class NoGeneration(SimulatedArithmeticPolicy):
    """A simulator that fails the test on any request: a run with nothing left must ask the engine nothing."""

    calls = 0

    async def generate(self, *args: Any, **kwargs: Any) -> Any:
        NoGeneration.calls += 1
        pytest.fail("a resumed run with nothing left asked the engine to generate")

    async def generate_watched(self, *args: Any, **kwargs: Any) -> Any:
        NoGeneration.calls += 1
        pytest.fail("a resumed run with nothing left asked the engine to generate")


def resume_as_stored(run: Path, engine: Any) -> ttscale.Run:
    """`ttscale.run` with the settings config.json's spec stored, into the same directory (a resume).
    """
    spec = raw_config(run)["spec"]
    return ttscale.run(strategy=spec["strategy"], budget=spec["budget"], task=spec["task"], limit=spec["limit"],
                       params=spec["params"], task_options=spec["task_options"], seed=spec["seed"], out=run,
                       engine=engine)


SLEEP_TIME_V2 = {"test_time": "vote", "verbosity": 0, "rethinks": 1, "rethink_tokens": 64, "memory_chars": None}
"""What the sleep-time fixture ran with (votes, from notes of one pass of at most its 64 sleep tokens, no limit),
in today's params (format 3): today's defaults would rethink 10 times and answer once."""


def todays(name: str, run: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(config, records) of a fixture as today's code reads them: as stored, but the sleep-time run's params and
    records filled in (format 3)."""
    config, records = raw_config(run), raw_lines(run)
    if name == "sleep_time":
        for part in ("identity", "spec"):
            config[part]["params"] = {**config[part]["params"], **SLEEP_TIME_V2}
        records = [{**r, "info": {**r["info"], "rethink_passes": 1}} for r in records]  # each spent sleep tokens
    return config, records


# -- the fixtures are what the code wrote before versions --------------------------------------------------------

def test_the_fixtures_are_format_1_as_written() -> None:
    runs = [V1 / name for name in RUNS] + sorted((V1 / "sweep" / "cells").iterdir())
    for run in runs:
        assert "format" not in raw_config(run), run
        assert raw_lines(run) and all("format" not in r for r in raw_lines(run)), run
    assert (V1 / "sleep_time" / "stages.jsonl").is_file()
    assert "derived" in raw_config(sorted((V1 / "sweep" / "cells").iterdir())[1])["command"]


@pytest.mark.parametrize("name", RUNS)
def test_a_v1_run_reads_in_todays_shape(name: str, tmp_path: Path) -> None:
    run = copy(name, tmp_path)
    stored = raw_lines(run)
    frame = ttscale.load_runs(run)
    assert len(frame) == len(stored)
    data = read_run(run)
    # These runs were made after the last change of shape version 1 saw: they read as they were stored (but for
    # the sleep-time run, which version 3 reads with what it ran filled in).
    config, records = todays(name, run)
    assert data.config == config and RunDir(run).read_config() == config
    assert data.records == records and RunDir(run).records() == records
    assert (data.config == raw_config(run)) is (name != "sleep_time")
    html = ttscale.report([run], out=tmp_path / "report.html")
    assert "<svg" in html and (tmp_path / "report.html").read_text(encoding="utf-8") == html


@pytest.mark.parametrize("name", [n for n in RUNS if n != "cli_self_consistency"])
def test_a_v1_run_resumes_with_nothing_left_and_asks_the_engine_nothing(name: str, tmp_path: Path) -> None:
    run = copy(name, tmp_path)
    before = {p.name: p.read_bytes() for p in run.iterdir() if p.name != "summary.json"}
    NoGeneration.calls = 0
    done = resume_as_stored(run, NoGeneration(seed=0))
    assert done.summary["resumed"] is True and NoGeneration.calls == 0
    assert done.summary["problems"] == len(raw_lines(run))
    after = {p.name: p.read_bytes() for p in run.iterdir() if p.name not in ("summary.json", ".lock")}
    assert after == before  # its config and results as they were: nothing ran, nothing was rewritten
    assert RunDir(run).read_config()["identity"] == todays(name, run)[0]["identity"]  # and the config still reads
    assert len(ttscale.load_runs(run)) == len(raw_lines(run))


def test_a_v1_api_run_with_another_seed_resumes(tmp_path: Path) -> None:
    # `ttscale.run(seed=3)` of that day seeded the run's requests by 3 and left the engine's own seed at 0; today
    # the call seeds both (as `ttscale run --seed` always did). Its run must still resume.
    run = copy("self_consistency", tmp_path)
    config = raw_config(run)
    assert config["command"][0] == "ttscale.run" and config["identity"]["engine"]["seed"] == 0
    for part in ("identity", "spec"):
        config[part]["seed"] = 3
    (run / CONFIG).write_text(json.dumps(config), encoding="utf-8")
    NoGeneration.calls = 0
    done = resume_as_stored(run, NoGeneration(seed=0))
    assert done.summary["resumed"] is True and NoGeneration.calls == 0
    assert RunDir(run).read_config()["identity"]["engine"]["seed"] == 3
    # A v1 CLI run kept its engine seed: `--seed` set it then too.
    cli_run = copy("cli_self_consistency", tmp_path)
    cli_config = raw_config(cli_run)
    cli_config["identity"]["seed"] = 3
    (cli_run / CONFIG).write_text(json.dumps(cli_config), encoding="utf-8")
    assert RunDir(cli_run).read_config()["identity"]["engine"]["seed"] == 0


def test_the_v1_cli_run_resumes_on_the_cli_without_starting_an_engine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import ttscale.engine

    async def no_engine(*args: Any, **kwargs: Any) -> Any:
        pytest.fail("a resumed run with nothing left started an engine")

    monkeypatch.setattr(ttscale.engine, "start_engine", no_engine)
    run = copy("cli_self_consistency", tmp_path)
    lines = (run / RESULTS).read_bytes()
    code, out, err = cli(capsys, "run", "--resume", str(run), "--json", "--no-progress")
    assert code == 0, err
    assert json.loads(out[out.index("{"):])["resumed"] is True
    assert (run / RESULTS).read_bytes() == lines and "format" not in raw_config(run)  # nothing ran or was rewritten
    assert "starting the engine" not in err


def test_an_older_v1_cli_run_resumes_with_its_engine_settings_read_as_today(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run made before -1 and deterministic mode: `--resume` rebuilds its spec from config.json, whose engine
    (None, no mode) reads as today's (-1, False), as its identity does, so the two agree."""
    import ttscale.engine

    async def no_engine(*args: Any, **kwargs: Any) -> Any:
        pytest.fail("a resumed run with nothing left started an engine")

    monkeypatch.setattr(ttscale.engine, "start_engine", no_engine)
    run = copy("cli_self_consistency", tmp_path)
    config = raw_config(run)
    for part in ("identity", "spec"):
        config[part]["engine"]["max_model_len"] = None
        del config[part]["engine"]["deterministic"]
    (run / CONFIG).write_text(json.dumps(config), encoding="utf-8")
    code, _, err = cli(capsys, "run", "--resume", str(run), "--json", "--no-progress")
    assert code == 0, err
    assert RunDir(run).read_config()["spec"]["engine"] == raw_config(V1 / "cli_self_consistency")["spec"]["engine"]


def test_recording_the_engine_of_a_v1_run_writes_its_config_in_v2(tmp_path: Path) -> None:
    run = copy("best_of_n", tmp_path)
    config = raw_config(run)
    del config["environment"]["engine"]  # a run killed while its engine started: resuming records it
    (run / CONFIG).write_text(json.dumps(config), encoding="utf-8")
    stored = (run / RESULTS).read_text(encoding="utf-8").splitlines(keepends=True)
    (run / RESULTS).write_text("".join(stored[:-1]), encoding="utf-8")  # a problem left: the engine starts
    before = RunDir(run).read_config()
    engine = SimulatedArithmeticPolicy(seed=0)
    resume_as_stored(run, engine)
    assert raw_config(run)["format"] == FORMAT_VERSION
    assert RunDir(run).read_config() == {**before, "environment": {**before["environment"],
                                                                   "engine": engine.describe()}}


def test_a_resumed_v1_run_appends_v2_records_after_its_v1_ones(tmp_path: Path) -> None:
    run = copy("self_consistency", tmp_path)
    stored = (run / RESULTS).read_text(encoding="utf-8").splitlines(keepends=True)
    (run / RESULTS).write_text("".join(stored[:-1]), encoding="utf-8")  # its last problem left to do
    done = resume_as_stored(run, SimulatedArithmeticPolicy(seed=0))
    assert done.summary["resumed"] is True and done.summary["problems"] == len(stored)
    lines = raw_lines(run)
    assert ["format" in r for r in lines] == [False] * (len(stored) - 1) + [True]
    assert lines[-1]["format"] == FORMAT_VERSION and next(iter(lines[-1])) == "format"  # the key leads the line
    records = RunDir(run).records()  # both versions read in one shape: the v2 line as the v1 ones
    assert records[:-1] == lines[:-1] and records[-1] == {k: v for k, v in lines[-1].items() if k != "format"}
    assert {frozenset(r) for r in records} == {frozenset(lines[0])}
    assert len(ttscale.load_runs(run)) == len(stored)
    assert RunDir(run).read_config()["identity"] == raw_config(run)["identity"]  # the config keeps reading
    again = resume_as_stored(run, NoGeneration(seed=0))  # and resumes again, a file of both versions
    assert again.summary["resumed"] is True and again.summary["problems"] == len(stored)


def test_a_v2_sleep_time_run_reads_as_the_vote_it_ran_and_resumes_as_it(tmp_path: Path) -> None:
    """A sleep-time run of format 2 (before the reference's rethinking and single answer) reads as what it ran, so
    a resume continues it as it was (a vote of n = 2 from the stored notes), not with today's defaults; set
    explicitly, today's rethinking is refused, naming what differs."""
    run = copy("sleep_time", tmp_path)
    config = raw_config(run)
    (run / CONFIG).write_text(json.dumps({"format": 2, **config}), encoding="utf-8")
    lines = [json.dumps({"format": 2, **r}) + "\n" for r in raw_lines(run)]
    (run / RESULTS).write_text("".join(lines[:-1]), encoding="utf-8")  # its last query left to do
    expected, records = todays("sleep_time", V1 / "sleep_time")
    assert RunDir(run).read_config() == expected and RunDir(run).records() == records[:-1]
    assert migrate_record({"format": 3, "strategy": "sleep_time", "info": {"sleep_tokens": 5}}, where="x") == {
        "strategy": "sleep_time", "info": {"sleep_tokens": 5}}  # today's records are read as written
    spec = config["spec"]
    with pytest.raises(RunDirError, match=r"differs in params: .*\"rethinks\": 1.* vs now .*\"rethinks\": 10"):
        ttscale.run(strategy="sleep_time", budget=spec["budget"], task=spec["task"], limit=spec["limit"],
                    params={**spec["params"], "rethinks": 10}, task_options=spec["task_options"], out=run,
                    engine=NoGeneration(seed=0))
    policy = SimulatedArithmeticPolicy(seed=0)
    done = resume_as_stored(run, policy)  # the spec as stored: it gives no test_time, rethinks nor memory limit
    assert done.summary["resumed"] is True and done.summary["problems"] == len(lines)
    assert [(r["n"], r["max_tokens"]) for r in policy.requests] == [(2, 48)]  # one vote of 2, its notes read back
    last = RunDir(run).records()[-1]
    assert last["id"] == records[-1]["id"] and len(last["samples"]) == 2
    assert last["info"]["rethink_passes"] == 1 and last["info"]["sleep_tokens"] == records[-1]["info"]["sleep_tokens"]


# -- the sweep fixture ----------------------------------------------------------------------------------------

def test_a_v1_sweep_fits_reports_and_reads(tmp_path: Path) -> None:
    sweep = copy("sweep", tmp_path)
    cells = sorted((sweep / "cells").iterdir())
    rows = sum(len(raw_lines(c)) for c in cells)
    assert len(ttscale.load_runs(sweep / "cells")) == rows
    coverage = ttscale.fit(law="coverage", runs=[sweep / "cells"], n_boot=50)
    assert coverage.law == "coverage" and coverage.n_units == 3  # the sweep's three problems
    saturation = ttscale.fit(law="saturation", runs=[sweep / "cells"], x="budget", n_boot=50)
    assert saturation.n_obs == rows and saturation.n_points == 2  # the two budgets
    assert "<svg" in ttscale.report([sweep / "cells"], out=tmp_path / "report.html")
    derived = read_run(cells[1])
    assert derived.config["environment"]["engine"]["derived_from"] == cells[0].name
    assert derived.records == raw_lines(cells[1])


# -- a version this code does not read ---------------------------------------------------------------------------

def test_a_config_of_a_newer_format_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = copy("self_consistency", tmp_path)
    config = raw_config(run)
    (run / CONFIG).write_text(json.dumps({**config, "format": 99}), encoding="utf-8")
    message = f"{run / CONFIG}: run format 99 is newer than this ttscale reads (≤ {FORMAT_VERSION}); upgrade ttscale"
    with pytest.raises(RunFormatError) as info:
        RunDir(run).read_config()
    assert str(info.value) == message
    assert isinstance(info.value, RunDirError) and isinstance(info.value, ValueError)
    with pytest.raises(RunLoadError, match="run format 99 is newer"):
        ttscale.load_runs(run)
    for argv in (["report", str(run)], ["run", "--resume", str(run), "--no-progress"]):
        code, _, err = cli(capsys, *argv)
        assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
        assert err.startswith("ttscale: error: ") and message in err
    with pytest.raises(RunFormatError, match="run format 99 is newer"):  # the API's resume, too
        resume_as_stored(run, NoGeneration(seed=0))


@pytest.mark.parametrize("found", ["2", 2.5, True, 0, None])
def test_a_format_that_is_not_a_version_is_refused(found: Any, tmp_path: Path) -> None:
    with pytest.raises(RunFormatError, match=r"config\.json: run format .* is not a version ttscale writes"):
        migrate_config({"format": found}, where=tmp_path / CONFIG)


def test_a_record_of_a_newer_format_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = copy("best_of_n", tmp_path)
    lines = (run / RESULTS).read_text(encoding="utf-8").splitlines(keepends=True)
    lines[1] = json.dumps({**json.loads(lines[1]), "format": 99}) + "\n"
    (run / RESULTS).write_text("".join(lines), encoding="utf-8")
    message = f"{run / RESULTS}:2: run format 99 is newer than this ttscale reads (≤ {FORMAT_VERSION}); upgrade ttscale"
    with pytest.raises(RunFormatError) as info:
        RunDir(run).records()
    assert str(info.value) == message
    with pytest.raises(RunLoadError) as loaded:
        read_run(run)
    assert str(loaded.value) == message
    for argv in (["report", str(run)], ["run", "--resume", str(run), "--no-progress"]):
        code, _, err = cli(capsys, *argv)
        assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
        assert message in err
    assert (run / RESULTS).read_text(encoding="utf-8") == "".join(lines)  # refused, never cut


# -- writing ------------------------------------------------------------------------------------------------------

def test_todays_run_files_carry_the_format(tmp_path: Path) -> None:
    prepared = prepare(RunSpec(strategy="best_of_n", task="arithmetic", limit=1))
    run_dir = RunDir(tmp_path / "run")
    with run_dir.open_for_writing():
        run_dir.write_config(new_config(prepared, argv=["ttscale"]))
        run_dir.append({"id": "a", "correct": True})
        run_dir.append_many([{"id": "b", "correct": False}, {"id": "c", "format": FORMAT_VERSION}])
    assert raw_config(run_dir.path)["format"] == FORMAT_VERSION
    assert [next(iter(r)) for r in raw_lines(run_dir.path)] == ["format"] * 3
    assert [r["format"] for r in raw_lines(run_dir.path)] == [FORMAT_VERSION] * 3
    assert run_dir.records() == [{"id": "a", "correct": True}, {"id": "b", "correct": False}, {"id": "c"}]
    assert "format" not in run_dir.read_config()  # the file's version, not the data's
    check_resume(run_dir, prepared)


def test_a_record_read_in_an_older_format_is_written_in_todays() -> None:
    old = {"format": 1, "id": "a", "strategy": "genrm", "samples": [{"answer": "1"}],
           "info": {"chains": [[[0.5, 10, 2, "default"]]]}}
    line = stamp_record(old)
    assert line["format"] == FORMAT_VERSION and line["samples"] == [{"answer": "1", "correct": None}]
    assert line["info"]["chains"] == [[[None, 10, 2, "unreadable"]]]
    with pytest.raises(RunFormatError, match="run format 99 is newer"):
        stamp_record({"id": "a", "format": 99})


# -- what the migration does -------------------------------------------------------------------------------------

def _v1_identity(**engine: Any) -> dict[str, Any]:
    """Today's identity of a run, its engine as a run made before versions stored it."""
    identity: dict[str, Any] = json.loads(json.dumps(prepare(RunSpec(strategy="best_of_n")).identity(), default=str))
    identity["engine"] = {k: v for k, v in {**identity["engine"], **engine}.items() if v != "absent"}
    return identity


def test_a_v1_identity_without_deterministic_or_with_max_model_len_none_reads_as_today(tmp_path: Path) -> None:
    today = json.loads(json.dumps(prepare(RunSpec(strategy="best_of_n")).identity(), default=str))
    old = _v1_identity(deterministic="absent", max_model_len=None)
    assert "deterministic" not in old["engine"] and old["engine"]["max_model_len"] is None
    config = migrate_config({"identity": old, "spec": {"engine": dict(old["engine"])}}, where=tmp_path / CONFIG)
    assert config["identity"] == today and "format" not in config
    assert config["spec"]["engine"] == today["engine"]  # the spec `--resume` starts the engine from, too
    assert old["engine"]["max_model_len"] is None  # the caller's dict is not edited
    served = {"backend": "openai", "model": "m"}  # a served model's identity has neither setting
    assert migrate_config({"identity": {"engine": served}}, where="x")["identity"]["engine"] == served


def test_a_v2_run_keeps_max_model_len_none_its_own_choice(tmp_path: Path) -> None:
    """None (exactly the model's own length) is a setting of its own today: only version 1 stored it for -1."""
    spec = RunSpec(strategy="best_of_n", task="arithmetic", limit=1, engine=EngineConfig(max_model_len=None))
    prepared = prepare(spec)
    run_dir = RunDir(tmp_path / "run")
    run_dir.path.mkdir()
    run_dir.write_config(new_config(prepared, argv=["ttscale"]))
    assert run_dir.read_config()["identity"]["engine"]["max_model_len"] is None
    check_resume(run_dir, prepared)  # resumes as itself (version 1's reading made it -1, and refused this)
    with pytest.raises(RunDirError, match=r"max_model_len: stored null vs now -1"):
        check_resume(run_dir, prepare(RunSpec(strategy="best_of_n", task="arithmetic", limit=1)))


def test_records_of_both_versions_in_one_file_read_as_today(tmp_path: Path) -> None:
    chains = [[[0.5, 10, 2, "default"], [1.0, 12, 3, "chain"]], [[0.0, 9, 1, "appended"]]]
    v1 = {"id": "a", "strategy": "genrm", "correct": True, "ledger": {}, "samples": [{"answer": "1"}],
          "info": {"chains": chains, "verdicts": {"chain": 1, "appended": 1, "default": 1}}}
    v2 = {"format": FORMAT_VERSION, "id": "b", "strategy": "genrm", "samples": [{"answer": "2", "correct": True}],
          "info": {"chains": [[[None, 8, 2, "unreadable"]]], "verdicts": {"chain": 0, "unreadable": 1}}}
    (tmp_path / RESULTS).write_text(json.dumps(v1) + "\n" + json.dumps(v2) + "\n", encoding="utf-8")
    a, b = RunDir(tmp_path).records()
    assert b == {k: v for k, v in v2.items() if k != "format"}  # today's: as it is
    assert a["samples"] == [{"answer": "1", "correct": None}]
    odd = migrate_record({**v1, "samples": [{"answer": "1"}, "odd"]}, where="x")
    assert odd["samples"] == [{"answer": "1", "correct": None}, "odd"]  # not an object: the readers' check says so
    (tmp_path / RESULTS).write_text(json.dumps({**v1, "samples": [{"answer": "1"}, "odd"]}) + "\n", encoding="utf-8")
    with pytest.raises(RunDirError, match=r"the record of problem 'a': samples\[1\] is \"odd\"; it must be an object"):
        RunDir(tmp_path).records()  # ... as every reader of the file does
    assert a["info"]["chains"] == [[[None, 10, 2, "unreadable"], [1.0, 12, 3, "chain"]], [[0.0, 9, 1, "appended"]]]
    assert a["info"]["verdicts"] == {"chain": 1, "appended": 1, "unreadable": 1}
    other = {"id": "c", "strategy": "budget_forcing", "info": {"chains": [{"thinking_tokens": 3}]}}
    assert migrate_record(other, where="x") == other  # another strategy's chains are its own


def test_the_real_runs_of_tests_data_read_as_before() -> None:
    """tests/data/real_runs are version-1 runs too: every reader sees their records as they were."""
    real = Path(__file__).resolve().parents[1] / "data" / "real_runs" / "sc-n4"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = read_run(real)
    stored = {str(r["id"]): r for r in raw_lines(real) if not r.get("unfinished")}
    assert run.records and all(r == stored[str(r["id"])] for r in run.records)


# -- version 2 → 3 (issue 44): mcts and generated_tests name the rule a version-2 run ran ---------------------------

def _as_version_2(run: Path, strategy: str) -> None:
    """Rewrite today's run `run` as the version-2 code wrote it: its default rule unnamed in the spec, its identity's
    parameters without the fields version 3 added, `codet` for the paper's formula."""
    config = raw_config(run)
    given, params = config["spec"]["params"], config["identity"]["params"]
    if strategy == "mcts":
        given.pop("selection")
        del params["c_base"]
        params.update(selection="uct", c_puct=1.0)
    else:
        given["select"] = params["select"] = "codet"
        del params["tests_per_sample"], params["shortlist"]
    (run / CONFIG).write_text(json.dumps({**config, "format": 2}), encoding="utf-8")
    lines = [{**r, "format": 2} for r in raw_lines(run)]
    if strategy == "generated_tests":
        lines = [{**r, "info": {**r["info"], "select": "codet"}} for r in lines]
    (run / RESULTS).write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")


@pytest.mark.parametrize("strategy", ["mcts", "generated_tests"])
def test_a_v2_run_of_a_strategy_whose_default_changed_resumes_as_the_rule_it_ran(strategy: str, tmp_path: Path) -> None:
    from ttscale.evals import load_task
    from ttscale.testing import SimulatedCodePolicy

    run = tmp_path / strategy
    if strategy == "mcts":
        ttscale.run(strategy="mcts", budget="300", task="arithmetic", limit=2, out=run,
                    engine=SimulatedArithmeticPolicy(),
                    params={"verifier": "arithmetic", "simulations": "2", "selection": "uct"})
    else:
        ttscale.run(strategy="generated_tests", budget="2k", task="code:1", limit=1, out=run,
                    engine=SimulatedCodePolicy(load_task("code:1")), params={"n": "2", "select": "codet_paper"})
    _as_version_2(run, strategy)
    config = RunDir(run).read_config()
    if strategy == "mcts":  # the UCT it ran (c = 1 is UCT's reference value: c_puct unset reads so)
        assert config["spec"]["params"]["selection"] == "uct"
        assert config["identity"]["params"]["c_puct"] is None and config["identity"]["params"]["c_base"] == 19652.0
    else:  # the paper's formula it ran, under its name today
        assert config["spec"]["params"]["select"] == config["identity"]["params"]["select"] == "codet_paper"
        assert {r["info"]["select"] for r in RunDir(run).records()} == {"codet_paper"}
    def resume() -> ttscale.Run:  # the stored spec as `ttscale run --resume` reads it (RunDir.read_config)
        spec = RunDir(run).read_config()["spec"]
        return ttscale.run(strategy=spec["strategy"], budget=spec["budget"], task=spec["task"], limit=spec["limit"],
                           params=spec["params"], seed=spec["seed"], out=run, engine=NoGeneration(seed=0))

    NoGeneration.calls = 0
    done = resume()
    assert done.summary["resumed"] is True and NoGeneration.calls == 0  # nothing left to run
    # Read as version 3 (not migrated), the stored spec would rebuild today's default rule, and the resume refuses.
    (run / CONFIG).write_text(json.dumps({**raw_config(run), "format": 3}), encoding="utf-8")
    with pytest.raises(RunDirError, match=r"cannot resume .* the run differs in params"):
        resume()


# -- version 3 → 4 (issue 61): generated_tests counts tests as CodeT and CodeMonkeys do --------------------------------

@pytest.mark.parametrize("select", ["codet", "codemonkeys"])
def test_a_v3_generated_tests_run_resumes_with_the_test_counts_it_ran(select: str, tmp_path: Path) -> None:
    from ttscale.evals import load_task
    from ttscale.testing import SimulatedCodePolicy

    run = tmp_path / select
    ttscale.run(strategy="generated_tests", budget="2k", task="code:1", limit=1, out=run,
                engine=SimulatedCodePolicy(load_task("code:1")), params={"n": "2", "select": select})
    # As version 3 wrote it: max_tests 8 (its default), no test_weights.
    config = raw_config(run)
    params = config["identity"]["params"]
    del params["test_weights"]
    params["max_tests"] = 8
    (run / CONFIG).write_text(json.dumps({**config, "format": 3}), encoding="utf-8")
    read = RunDir(run).read_config()
    expected = {"max_tests": 8} if select == "codet" else {"test_weights": "once"}
    assert {k: read["spec"]["params"][k] for k in expected} == expected
    assert {k: read["identity"]["params"][k] for k in expected} == expected

    def resume() -> ttscale.Run:
        spec = RunDir(run).read_config()["spec"]
        return ttscale.run(strategy=spec["strategy"], budget=spec["budget"], task=spec["task"], limit=spec["limit"],
                           params=spec["params"], seed=spec["seed"], out=run, engine=NoGeneration(seed=0))

    NoGeneration.calls = 0
    assert resume().summary["resumed"] is True and NoGeneration.calls == 0
    # Read as version 4 (not migrated), the stored spec would rebuild today's counts, and the resume refuses.
    (run / CONFIG).write_text(json.dumps({**raw_config(run), "format": 4}), encoding="utf-8")
    with pytest.raises(RunDirError, match=r"cannot resume .* the run differs in params"):
        resume()


def test_a_v3_mcts_run_of_openr_reads_and_resumes_as_openr_simulate(tmp_path: Path) -> None:
    """Version 3's `selection=openr` (the default) was OpenR's `_simulate`; today's `openr` is `vanila_mcts`."""
    run = tmp_path / "mcts"
    ttscale.run(strategy="mcts", budget="300", task="arithmetic", limit=2, out=run, engine=SimulatedArithmeticPolicy(),
                params={"verifier": "arithmetic", "simulations": "2", "selection": "openr_simulate"})
    config = raw_config(run)
    del config["spec"]["params"]["selection"]  # version 3's default, unnamed
    config["identity"]["params"]["selection"] = "openr"
    (run / CONFIG).write_text(json.dumps({**config, "format": 3}), encoding="utf-8")
    lines = [{**r, "format": 3, "info": {**r["info"], "selection": "openr"}} for r in raw_lines(run)]
    (run / RESULTS).write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    read = RunDir(run).read_config()
    assert read["spec"]["params"]["selection"] == read["identity"]["params"]["selection"] == "openr_simulate"
    assert {r["info"]["selection"] for r in RunDir(run).records()} == {"openr_simulate"}
    assert migrate_record({"format": 4, "strategy": "mcts", "info": {"selection": "openr"}}, where="x") == {
        "strategy": "mcts", "info": {"selection": "openr"}}  # today's openr stays openr
    spec = read["spec"]
    NoGeneration.calls = 0
    done = ttscale.run(strategy=spec["strategy"], budget=spec["budget"], task=spec["task"], limit=spec["limit"],
                       params=spec["params"], seed=spec["seed"], out=run, engine=NoGeneration(seed=0))
    assert done.summary["resumed"] is True and NoGeneration.calls == 0
