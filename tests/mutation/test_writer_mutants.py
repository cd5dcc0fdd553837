"""ttscale.runstore.writer's flags and counts on new, resumed and finished runs (issue 60): what config.json records
(the command, the engine once, and only once), what `todo`, `spent`, `new` and `kept` say on entering, the wall time a
resumed run adds to its earlier parts, and what a failed new run removes (only what it made). A run's records here
are written by hand, so every count is known."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from ttscale.running.run_spec import RunSpec
from ttscale.running.runner import prepare
from ttscale.runstore.names import CONFIG, ENGINE_LOG, STAGES, SUMMARY
from ttscale.runstore.storage import RunDir, RunDirError
from ttscale.runstore.writer import RunExists, open_run
from ttscale.verifiers import cross_check

ENGINE = {"name": "recorded", "version": "1"}


@pytest.fixture(scope="module")
def prepared() -> Any:
    return prepare(RunSpec(strategy="self_consistency", task="arithmetic", limit=5))


def config(path: Path) -> dict[str, Any]:
    return json.loads((path / CONFIG).read_text())


def start(path: Path, prepared: Any, records: list[dict[str, Any]], *, wall: float | None = None) -> None:
    """A run as a kill left it: config.json, `records`, and (with `wall`) a summary.json of its earlier part."""
    with open_run(path, resume=False, prepare=lambda stored: prepared, argv=["ttscale", "run"]) as writer:
        for record in records:
            writer.append(record)
    if wall is not None:
        (path / SUMMARY).write_text(json.dumps({"wall_seconds": wall}))


def test_a_new_run_records_its_command_and_the_engine_it_was_given(tmp_path: Path, prepared: Any) -> None:
    out = tmp_path / "run"
    writer = open_run(out, resume=None, prepare=lambda stored: prepared, argv=["ttscale", "run", "--x"],
                      engine=ENGINE)
    assert writer.new and writer.engine_log is None and writer.stages == out / STAGES
    with writer:
        assert config(out)["command"] == ["ttscale", "run", "--x"]
        assert config(out)["environment"]["engine"] == ENGINE
        writer.started({"name": "another"})  # recorded already: config.json keeps the one it has
        assert config(out)["environment"]["engine"] == ENGINE
        assert [p.id for p in writer.todo] == [p.id for p in prepared.problems] and writer.spent == 0.0
        assert not writer.kept


def test_a_new_run_records_the_engine_once_it_starts(tmp_path: Path, prepared: Any) -> None:
    out = tmp_path / "run"
    with open_run(out, resume=None, prepare=lambda stored: prepared, argv=["a"], engine_log=True) as writer:
        assert writer.engine_log == out / ENGINE_LOG
        assert config(out)["environment"]["engine"] is None
        writer.started(ENGINE)
        assert config(out)["environment"]["engine"] == ENGINE
        writer.started({"name": "later"})
        assert config(out)["environment"]["engine"] == ENGINE
        assert config(out)["command"] == ["a"]


def test_a_resumed_run_reads_what_is_left_and_what_was_spent(tmp_path: Path, prepared: Any) -> None:
    out = tmp_path / "run"
    ids = [p.id for p in prepared.problems]
    start(out, prepared, [{"id": ids[0], "correct": True, "ledger": {"spent": 7.0}},
                          {"id": ids[2], "correct": False, "ledger": {"spent": 5.0}}], wall=4.0)
    stored = config(out)
    seen: list[Any] = []

    def prepared_from(stored_now: Any) -> Any:
        seen.append(stored_now)
        return prepared

    writer = open_run(out, resume=True, prepare=prepared_from, engine=None)
    # The stored config.json (in today's shape), read once, is what the run is prepared from.
    assert len(seen) == 1 and (seen[0]["identity"], seen[0]["command"]) == (stored["identity"], stored["command"])
    assert not writer.new
    with writer:
        assert [p.id for p in writer.todo] == [ids[1], ids[3], ids[4]] and writer.spent == 12.0
        assert writer.kept
        writer.started(ENGINE)  # a resumed run whose config.json recorded no engine records this one
        assert config(out)["environment"]["engine"] == ENGINE
        summary = writer.finish(wall_seconds=1.5, cross_check=cross_check)
    assert summary["wall_seconds"] == pytest.approx(5.5) and summary["resumed"] is True
    assert summary["problems"] == 2 and summary["unfinished"] == 3  # finished, and not run (the three left)
    assert config(out)["command"] == ["ttscale", "run"]  # a resume keeps the command that made the run


def test_a_resumed_run_keeps_the_engine_its_config_recorded(tmp_path: Path, prepared: Any) -> None:
    out = tmp_path / "run"
    with open_run(out, resume=False, prepare=lambda stored: prepared, argv=["a"], engine=ENGINE):
        pass
    with open_run(out, resume=True, prepare=lambda stored: prepared) as writer:
        writer.started({"name": "today's"})
    assert config(out)["environment"]["engine"] == ENGINE


def test_a_new_run_s_wall_time_is_its_own_and_its_summary_not_resumed(tmp_path: Path, prepared: Any) -> None:
    out = tmp_path / "run"
    with open_run(out, resume=False, prepare=lambda stored: prepared, argv=["a"]) as writer:
        for problem in prepared.problems:
            writer.append({"id": problem.id, "correct": True, "ledger": {"spent": 1.0}})
        summary = writer.finish(wall_seconds=2.0, cross_check=cross_check)
    assert summary["wall_seconds"] == pytest.approx(2.0) and summary["resumed"] is False
    assert summary["problems"] == 5 and summary["unfinished"] == 0
    # Finished, then resumed: nothing left to run; the earlier part's time is carried.
    with open_run(out, resume=None, prepare=lambda stored: prepared) as writer:
        assert writer.todo == [] and writer.spent == 5.0 and not writer.new
        summary = writer.finish(wall_seconds=0.5, cross_check=cross_check)
    assert summary["wall_seconds"] == pytest.approx(2.5) and summary["resumed"] is True


def test_resume_is_refused_where_no_run_is_held_and_a_new_run_where_one_is(tmp_path: Path, prepared: Any) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(RunDirError):
        open_run(empty, resume=True, prepare=lambda stored: prepared)
    out = tmp_path / "run"
    start(out, prepared, [])
    with pytest.raises(RunExists):
        open_run(out, resume=False, prepare=lambda stored: prepared)


def test_a_resume_of_another_run_is_refused(tmp_path: Path, prepared: Any) -> None:
    out = tmp_path / "run"
    start(out, prepared, [])
    other = prepare(RunSpec(strategy="self_consistency", task="arithmetic", limit=3))
    with pytest.raises(RunDirError, match="the run differs"):
        open_run(out, resume=True, prepare=lambda stored: other)


def test_a_new_run_that_fails_on_entering_removes_the_folder_it_made(tmp_path: Path, prepared: Any,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(self: RunDir, data: dict[str, Any]) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(RunDir, "write_config", refused)
    out = tmp_path / "run"
    with pytest.raises(OSError, match="disk full"), open_run(out, resume=None, prepare=lambda stored: prepared):
        pass
    assert not out.exists()
    found = tmp_path / "found"
    found.mkdir()
    with pytest.raises(OSError, match="disk full"), open_run(found, resume=None, prepare=lambda stored: prepared):
        pass
    assert found.is_dir() and not (found / CONFIG).exists()  # a folder it found stays: only its files go


def test_a_new_run_that_fails_before_finishing_a_problem_removes_what_it_made(tmp_path: Path,
                                                                             prepared: Any) -> None:
    out = tmp_path / "run"
    with pytest.raises(RuntimeError), open_run(out, resume=None, prepare=lambda stored: prepared,
                                               engine_log=True) as writer:
        assert writer.engine_log is not None
        writer.engine_log.write_text("the engine's start")
        writer.stages.write_text("")
        raise RuntimeError("the engine failed")
    assert not out.exists()


def test_a_new_run_that_finished_a_problem_is_kept_on_a_failure(tmp_path: Path, prepared: Any) -> None:
    out = tmp_path / "run"
    with pytest.raises(RuntimeError), open_run(out, resume=None, prepare=lambda stored: prepared) as writer:
        writer.append({"id": prepared.problems[0].id, "correct": True, "ledger": {"spent": 1.0}})
        assert writer.kept
        raise RuntimeError("stopped")
    assert (out / CONFIG).is_file() and len((out / "results.jsonl").read_text().splitlines()) == 1


def test_the_summary_names_the_run_and_why_each_unfinished_problem_is(tmp_path: Path, prepared: Any) -> None:
    out = tmp_path / "run"
    ids = [p.id for p in prepared.problems]
    with open_run(out, resume=None, prepare=lambda stored: prepared, argv=["a"]) as writer:
        writer.append({"id": ids[0], "correct": True, "ledger": {"spent": 1.0}})
        summary = writer.finish(wall_seconds=1.0, cross_check=cross_check, faults={ids[2]: "server fault: 503"},
                                resumed=True, engine={"workers": ["w1", "w2"]})
    assert (summary["strategy"], summary["task"], summary["budget"]) == ("self_consistency", "arithmetic",
                                                                         str(prepared.budget))
    assert summary["resumed"] is True  # as the caller says (a replayed cell says False)
    assert summary["unfinished"] == 4
    assert summary["unfinished_examples"] == [{"id": i, "error": "server fault: 503" if i == ids[2] else "not run"}
                                              for i in ids[1:]]
    # The engines given with the summary (Ray workers', known once they ran) are what config.json records.
    assert config(out)["environment"]["engine"] == {"workers": ["w1", "w2"]}


def test_a_record_outside_the_writer_is_refused_and_flush_waits_for_every_record(tmp_path: Path,
                                                                                 prepared: Any) -> None:
    import asyncio

    writer = open_run(tmp_path / "run", resume=None, prepare=lambda stored: prepared, argv=["a"])
    with pytest.raises(RuntimeError, match="^" + re.escape("RunWriter.record outside `with writer:`") + "$"):
        asyncio.run(writer.record({"id": prepared.problems[0].id}))
    asyncio.run(writer.flush())  # nothing handed over: nothing to wait for

    async def hand_over(w: Any) -> int:
        tasks = [asyncio.ensure_future(w.record({"id": p.id, "correct": True, "ledger": {"spent": 1.0}}))
                 for p in prepared.problems]
        await asyncio.sleep(0)  # handed over, not awaited by their callers
        await w.flush()
        written = len((tmp_path / "run" / "results.jsonl").read_text().splitlines())
        await asyncio.gather(*tasks)
        return written

    with writer:
        assert asyncio.run(hand_over(writer)) == len(prepared.problems)


def test_an_engine_recorded_before_the_run_is_entered_starts_its_config(tmp_path: Path, prepared: Any) -> None:
    writer = open_run(tmp_path / "run", resume=None, prepare=lambda stored: prepared, argv=["a"])
    (tmp_path / "run").mkdir()
    writer.started(ENGINE)
    assert config(tmp_path / "run")["environment"] == {"engine": ENGINE}


def test_an_attempt_a_server_fault_cut_short_counts_in_what_was_spent_but_not_as_finished(
    tmp_path: Path, prepared: Any
) -> None:
    out = tmp_path / "run"
    ids = [p.id for p in prepared.problems]
    start(out, prepared, [{"id": ids[0], "correct": True, "ledger": {"spent": 7.0}},
                          {"id": ids[1], "unfinished": True, "ledger": {"spent": 3.0}},  # its tokens were generated
                          {"id": "not-in-this-run", "unfinished": True, "ledger": {"spent": 100.0}}])
    with open_run(out, resume=True, prepare=lambda stored: prepared) as writer:
        assert [p.id for p in writer.todo] == ids[1:]  # the cut-short problem runs again
        assert writer.spent == 10.0  # what this run's problems spent, the cut-short attempt's included


def test_a_failed_write_fails_its_records_and_the_next_ones_are_still_written(
    tmp_path: Path, prepared: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio
    import time

    calls: list[int] = []
    append_many = RunDir.append_many

    def flaky(self: RunDir, records: list[dict[str, Any]]) -> None:
        calls.append(len(records))
        if len(calls) == 1:
            time.sleep(0.2)  # the next record is handed over while this write fails
            raise OSError("disk full")
        append_many(self, records)

    monkeypatch.setattr(RunDir, "append_many", flaky)
    ids = [p.id for p in prepared.problems]

    async def both(writer: Any) -> list[str]:
        first = asyncio.ensure_future(writer.record({"id": ids[0], "ledger": {"spent": 1.0}}))
        await asyncio.sleep(0.05)
        second = asyncio.ensure_future(writer.record({"id": ids[1], "ledger": {"spent": 1.0}}))
        outcomes = await asyncio.wait_for(asyncio.gather(first, second, return_exceptions=True), timeout=10)
        return [type(x).__name__ for x in outcomes]

    with open_run(tmp_path / "run", resume=None, prepare=lambda stored: prepared, argv=["a"]) as writer:
        assert asyncio.run(both(writer)) == ["OSError", "NoneType"]
        assert [r["id"] for r in RunDir(tmp_path / "run").records()] == [ids[1]]
