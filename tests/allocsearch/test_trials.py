"""Trials and their log: round trips, validation, a torn last line, refusing another search's directory."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ttscale.allocsearch import Evaluation, Trial, TrialLog
from ttscale.testing.allocsearch import genrm_space


def trial(index: int, s: int = 1, v: int = 0, accuracy: float = 0.5) -> Trial:
    return Trial.of(index=index, allocation={"S": s, "V": v}, proposer="grid", reasoning="because",
                    evaluation=Evaluation(accuracy=accuracy, ci_low=0.4, ci_high=0.6, cost=512.0, n=100))


def test_trial_round_trips_through_a_dict() -> None:
    t = trial(3, 4, 2)
    assert Trial.from_dict(json.loads(json.dumps(t.to_dict()))) == t
    with pytest.raises(ValueError, match="unknown trial key 'colour'"):
        Trial.from_dict({**t.to_dict(), "colour": 1})
    with pytest.raises(ValueError, match="missing"):
        Trial.from_dict({k: v for k, v in t.to_dict().items() if k != "accuracy"})


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"accuracy": 1.2, "ci_high": 1.3}, "need 0 ≤ ci_low ≤ accuracy ≤ ci_high ≤ 1"),
    ({"ci_low": 0.6}, "need 0 ≤ ci_low ≤ accuracy ≤ ci_high ≤ 1"),
    ({"cost": -1}, "cost must be ≥ 0, got -1.0"),
    ({"n": 0}, "n must be ≥ 1, got 0"),
    ({"accuracy": float("nan")}, "accuracy must be a finite number, got nan"),
])
def test_evaluation_is_validated(kwargs: dict[str, object], message: str) -> None:
    base: dict[str, object] = {"accuracy": 0.5, "ci_low": 0.4, "ci_high": 0.6, "cost": 1.0, "n": 10}
    with pytest.raises(ValueError, match=message):
        Evaluation(**{**base, **kwargs})  # type: ignore[arg-type]


def open_log(path: Path, **changes: object) -> tuple[TrialLog, list[Trial]]:
    log = TrialLog(path)
    args: dict[str, object] = {"space": genrm_space(), "proposer": "random", "seed": 0, "trials": 6, **changes}
    return log, log.open(**args)  # type: ignore[arg-type]


def test_log_appends_and_resumes(tmp_path: Path) -> None:
    log, trials = open_log(tmp_path / "log")
    assert trials == []
    log.append(trial(0))
    log.append(trial(1, 2, 1))
    header = json.loads((tmp_path / "log" / "search.json").read_text())
    assert header["space"] == "genrm-simulated" and header["proposer"] == "random" and header["seed"] == 0
    assert header["trials"] == 6 and header["total_budget"] == 32768 and header["format"] == 1
    _, again = open_log(tmp_path / "log", trials=9)
    assert again == [trial(0), trial(1, 2, 1)]
    assert json.loads((tmp_path / "log" / "search.json").read_text())["trials"] == 9  # extended
    assert sorted(p.name for p in (tmp_path / "log").iterdir()) == ["search.json", "trials.jsonl"]


def test_torn_last_line_is_ignored_then_cut_on_append(tmp_path: Path) -> None:
    log, _ = open_log(tmp_path)
    log.append(trial(0))
    whole = json.dumps(trial(1).to_dict())
    with open(tmp_path / "trials.jsonl", "a") as handle:
        handle.write(whole[:40])  # a kill -9 in the middle of a write
    assert log.read() == [trial(0)]
    log.append(trial(1, 4, 4))
    assert log.read() == [trial(0), trial(1, 4, 4)]
    assert (tmp_path / "trials.jsonl").read_text().count("\n") == 2
    with open(tmp_path / "trials.jsonl", "a") as handle:
        handle.write(json.dumps(trial(2).to_dict()))  # whole but without its newline: not yet a trial
    assert len(log.read()) == 2


def test_bad_middle_line_is_refused_not_cut(tmp_path: Path) -> None:
    log, _ = open_log(tmp_path)
    log.append(trial(0))
    with open(tmp_path / "trials.jsonl", "a") as handle:
        handle.write("not json\n")
    log_text = (tmp_path / "trials.jsonl").read_text()
    with pytest.raises(ValueError, match=r"line 2 of .* is not a trial"):
        log.read()
    assert (tmp_path / "trials.jsonl").read_text() == log_text


@pytest.mark.parametrize(("change", "message"), [
    ({"seed": 1}, "the log differs in seed: stored 0 vs now 1"),
    ({"proposer": "grid"}, 'the log differs in proposer: stored "random" vs now "grid"'),
    ({"space": genrm_space(total_budget=1024)}, "the log differs in total_budget: stored 32768 vs now 1024"),
])
def test_another_search_is_refused(tmp_path: Path, change: dict[str, object], message: str) -> None:
    log, _ = open_log(tmp_path)
    log.append(trial(0))
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    with pytest.raises(ValueError, match=re.escape(f"cannot resume {tmp_path}: {message}")):
        open_log(tmp_path, **change)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_a_folder_of_other_files_is_refused_and_left_alone(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match=re.escape("it holds 'notes.txt' and no search.json")):
        open_log(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "search.json").write_text('{"something": "else"}')
    with pytest.raises(ValueError, match="is not a ttscale allocation-search log"):
        open_log(tmp_path / "other")
