"""One reader of runs (ttscale.runstore.runs), on REAL run directories (tests/data/real_runs, written by make_runs.py).

fit, report and load_runs read through it: a torn last line changes nothing they print, an errored problem
is counted and kept as a wrong answer, and each sample carries the task grader's verdict the run stored.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ttscale.cli import main
from ttscale.evals import load_task
from ttscale.reporting import load_runs
from ttscale.runstore.runs import RunLoadError, TornTailWarning, read_run, read_runs
from ttscale.schema import Problem

REAL = Path(__file__).resolve().parents[1] / "data" / "real_runs"
RUNS = [REAL / name for name in ("sc-n4", "sc-n8", "sc-n16")]  # self-consistency, 4, 8 and 16 samples


def copy(run: Path, to: Path) -> Path:
    to.parent.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copytree(run, to))


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_real_run_reads_with_its_identity_and_graded_samples() -> None:
    run = read_run(RUNS[0])
    assert len(run.records) == 12 and not run.errored and not run.torn_tail
    assert run.model == "embedded" and run.identity["strategy"] == "self_consistency"
    task = load_task(run.identity["task"]["spec"])
    samples = [(s, r) for r in run.records for s in r["samples"]]
    assert samples and all(isinstance(s["correct"], bool) for s, _ in samples)
    # The stored verdict is the task grader's, sample by sample.
    for sample, record in samples:
        problem = Problem(id=record["id"], question="", reference=record["reference"])
        assert sample["correct"] == (sample["answer"] is not None and task.grade(sample["answer"], problem))
    assert sorted(r.label for r in read_runs(REAL)) == ["sc-n16", "sc-n4", "sc-n8"]


def test_a_torn_last_line_fits_reports_and_loads_as_the_run_without_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    whole, torn = copy(RUNS[1], tmp_path / "a" / "sc-n8"), copy(RUNS[1], tmp_path / "b" / "sc-n8")
    with (torn / "results.jsonl").open("a") as handle:
        handle.write('{"id": "arith-L5-0009", "strategy": "self_consistency", "correct": tr')  # killed mid-write
    with pytest.warns(TornTailWarning, match="torn last line was left out"):
        assert read_run(torn).torn_tail and read_run(torn).records == read_run(whole).records
    for argv in (["fit", "--law", "coverage", "--n-boot", "50", "--json"],
                 ["fit", "--law", "saturation", "--x", "spent", "--n-boot", "50", "--json"]):
        code_w, out_w, _ = cli(capsys, *argv, str(whole))
        code_t, out_t, _ = cli(capsys, *argv, str(torn))
        fit_w, fit_t = json.loads(out_w), json.loads(out_t)
        torn_note = "sc-n8: a torn last line of results.jsonl left out (a run cut off or still writing)"
        assert code_w == code_t == 0 and fit_t["details"].pop("read") == [torn_note]
        assert fit_w["details"].pop("read") == [] and fit_w == fit_t
    assert cli(capsys, "report", str(whole))[1] == cli(capsys, "report", str(torn))[1].replace(str(torn), str(whole))
    with pytest.warns(TornTailWarning):
        frames = [load_runs(p).drop(columns="run_dir") for p in (whole, torn)]
    assert frames[0].equals(frames[1])


def test_errored_problems_are_counted_and_kept_as_wrong(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = copy(RUNS[0], tmp_path / "sc-n4")
    lines = (run / "results.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    # What the runner writes when the strategy raises: no answer, wrong, and the reason.
    first.update(prediction=None, correct=False, samples=[], error="ValueError: the strategy failed")
    (run / "results.jsonl").write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    data = read_run(run)
    assert len(data.records) == 12 and [r["id"] for r in data.errored] == [first["id"]]
    code, out, _ = cli(capsys, "fit", "--law", "saturation", "--x", "spent", "--n-boot", "50", str(run))
    assert code == 0 and "read       sc-n4: 1 of 12 problems errored (counted as wrong)" in out
    table = load_runs(run, per="run")
    assert table.loc[0, "errors"] == 1 and table.loc[0, "problems"] == 12


def test_the_three_budgets_fit_the_laws_from_the_real_runs(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "fit", "--law", "saturation", "--x", "budget", "--n-boot", "50", "--json",
                       *map(str, RUNS))
    fit = json.loads(out)
    assert code == 0 and fit["n_units"] == 12 and fit["n_points"] == 3 and fit["details"]["read"] == []
    code, out, _ = cli(capsys, "fit", "--law", "coverage", "--n-boot", "50", "--json", *map(str, RUNS))
    # Coverage counts each problem's samples over all three runs, graded as the runs stored them.
    samples = sum(len(r["samples"]) for run in RUNS for r in read_run(run).records)
    assert code == 0 and json.loads(out)["n_units"] == 12 and samples > 12


def test_a_bad_line_with_more_after_it_is_one_line_naming_it(tmp_path: Path) -> None:
    run = copy(RUNS[0], tmp_path / "sc-n4")
    lines = (run / "results.jsonl").read_text().splitlines()
    (run / "results.jsonl").write_text("\n".join([lines[0], '{"id": "edited by hand', *lines[1:]]) + "\n")
    with pytest.raises(RunLoadError, match=r"results.jsonl:2 is not a whole JSON record") as info:
        read_run(run)
    assert "\n" not in str(info.value)
