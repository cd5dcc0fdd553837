"""Issue 32, items 2, 8, 9 and 10: what report, fit, policy and the API do with hostile paths, records and values.

- 2: no command writes over one of its inputs or over a file of a run directory (resolved paths, links included);
- 8: records of problems that are not in the run's task are left out by every reader, as summary.json leaves them;
- 9: Python values of the wrong type for strategy parameters are refused before any engine starts;
- 10: a ledger, config or stored spec of the wrong type is one line naming the file and the field, exit 2.

Run directories are SYNTHETIC (tests/reporting/report_synthetic.py) or made by the simulated policy: no engine.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any

import pytest

import ttscale
from tests.reporting.report_synthetic import make_run
from ttscale.cli import main
from ttscale.kit.params import params_class, parse_params
from ttscale.strategies import STRATEGIES


def _one_error_line(capsys: pytest.CaptureFixture[str], *needles: str) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("ttscale: error: "), err
    assert "Error:" not in lines[0] and "Traceback" not in err, err  # a sentence, not an exception's name
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


# -- 2: never over an input, never over a run's file -------------------------------------------------


def test_report_out_never_writes_over_a_run_file_or_an_input(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    run = make_run(tmp_path / "runs", "sc", problems=4)
    other = make_run(tmp_path / "elsewhere", "bon", strategy="best_of_n", problems=4)
    before, before_other = _snapshot(run), _snapshot(other)
    (tmp_path / "link.md").symlink_to(run / "results.jsonl")
    os.link(run / "summary.json", tmp_path / "hard.md")
    outs = [run / "results.jsonl", run / ".." / "sc" / "config.json", tmp_path / "link.md", tmp_path / "hard.md",
            other / "summary.json", run / "engine.log", tmp_path / "runs" / "results.jsonl"]
    for out in outs:
        assert main(["report", str(tmp_path / "runs"), "--format", "md", "--out", str(out)]) == 2, out
        _one_error_line(capsys, "--out", "write elsewhere")
        with pytest.raises(ValueError, match="write elsewhere"):
            ttscale.report([tmp_path / "runs"], out=out, format="md")
    assert _snapshot(run) == before and _snapshot(other) == before_other
    assert not (run / "engine.log").exists() and not (tmp_path / "runs" / "results.jsonl").exists()
    # A new file beside the run's own is an ordinary output.
    assert main(["report", str(run), "--out", str(run / "report.md")]) == 0
    assert (run / "report.md").read_text().startswith("#") and _snapshot(run).items() >= before.items()


def test_fit_plot_never_lands_on_the_data_it_plots(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    run = make_run(tmp_path, "sc", problems=4)
    before = _snapshot(run)
    (tmp_path / "plot.png").symlink_to(run / "results.jsonl")  # matplotlib writes through a link
    assert main(["fit", "--law", "coverage", "--n-boot", "20", str(run), "--plot", str(tmp_path / "plot.png")]) == 2
    _one_error_line(capsys, "--plot", "results.jsonl")
    points = tmp_path / "points.csv"
    points.write_text("k,coverage\n1,0.2\n2,0.3\n4,0.4\n8,0.5\n")
    (tmp_path / "points.png").symlink_to(points)
    assert main(["fit", "--law", "coverage", "--n-boot", "20", "--points", str(points), "--plot",
                 str(tmp_path / "points.png")]) == 2
    _one_error_line(capsys, "--plot", "points.csv")
    assert _snapshot(run) == before and points.read_text().startswith("k,coverage\n1,0.2")


def test_policy_out_never_writes_over_the_sweep_it_learns_from(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    from tests.adaptive.sim import SeededSimulator, model_dir

    root = tmp_path / "sweep"
    ttscale.sweep(strategies=["best_of_n max_tokens=40"], budgets=["80", "160", "320"], task="arithmetic:1-3",
                  limit=6, model=str(model_dir(tmp_path)), engine=SeededSimulator(seed=1), out=root)
    capsys.readouterr()  # the sweep's own log
    sweep_json = (root / "sweep.json").read_bytes()
    cell = next(p for p in (root / "cells").iterdir() if (p / "results.jsonl").is_file())
    results = (cell / "results.jsonl").read_bytes()
    for out in (root / "sweep.json", cell / "results.jsonl"):
        assert main(["policy", "--sweep", str(root), "--n-bins", "2", "--probe-n", "2", "--out", str(out)]) == 2
        _one_error_line(capsys, "policy: --out", "write elsewhere")
    assert (root / "sweep.json").read_bytes() == sweep_json and (cell / "results.jsonl").read_bytes() == results


def test_outputs_are_new_files_never_written_through_another_hard_link(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 59: a hard link to a file of a run that is not the command's input (another run's results) was written
    through: `ln RUNB/results.jsonl x.md; ttscale report RUNA --out x.md` turned RUNB's results into Markdown."""
    runa = make_run(tmp_path / "a", "sc", problems=4)
    runb = make_run(tmp_path / "b", "bon", strategy="best_of_n", problems=4)
    before = _snapshot(runb)
    for i, (name, command) in enumerate([
        ("report.md", ["report", str(runa), "--format", "md", "--out"]),
        ("report.html", ["report", str(runa), "--out"]),
    ]):
        out = tmp_path / f"{i}-{name}"
        os.link(runb / "results.jsonl", out)
        assert main([*command, str(out)]) == 0, capsys.readouterr().err
        assert out.read_text().lstrip().startswith(("#", "<")) and os.stat(out).st_nlink == 1
    out = tmp_path / "api.md"
    os.link(runb / "summary.json", out)
    ttscale.report([runa], out=out, format="md")
    assert out.read_text().startswith("#") and os.stat(out).st_nlink == 1
    if pytest.importorskip("matplotlib"):
        out = tmp_path / "plot.png"
        os.link(runb / "config.json", out)
        assert main(["fit", "--law", "coverage", "--n-boot", "20", str(runa), "--plot", str(out)]) == 0
        assert out.read_bytes().startswith(b"\x89PNG") and os.stat(out).st_nlink == 1
    assert _snapshot(runb) == before  # every file of the run that no command read kept its content


def test_a_learned_policy_is_a_toolkit_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ttscale.outputs import OutputError, check_output

    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (sweep / "sweep.json").write_text("{}")
    (sweep / "policy-3.json").write_text('{"rows": []}')
    with pytest.raises(OutputError, match=r"policy-3\.json of the ttscale directory"):
        check_output(sweep / "policy-3.json", inputs=[tmp_path / "runs"], flag="--out")
    check_output(tmp_path / "policy-3.json", inputs=[tmp_path / "runs"], flag="--out")  # elsewhere: a user's file


# -- 8: records that do not belong ------------------------------------------------------------------


def test_records_of_problems_outside_the_task_are_left_out_by_every_reader(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ttscale.evals import load_task
    from ttscale.runstore.runs import read_run

    run = make_run(tmp_path, "sc", problems=4)  # the first 4 problems of arithmetic:1-5 (limit 4)
    lines = (run / "results.jsonl").read_text().splitlines(keepends=True)
    first = json.loads(lines[0])
    strays = [{**first, "id": "not-a-problem"}, {**first, "id": "arith-L1-0050"}]  # unknown; past the limit
    with (run / "results.jsonl").open("a") as handle:
        handle.writelines(json.dumps(r) + "\n" for r in strays)
    summary = json.loads((run / "summary.json").read_text())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        frame = ttscale.load_runs(run)
    assert len(frame) == summary["problems"] == 4 and "not-a-problem" not in set(frame["id"])
    said = [str(w.message) for w in caught]
    assert said == [f"{run / 'results.jsonl'}: 2 records of problems not in the run's task left out (as summary.json "
                    "leaves them out)"], said
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert len(read_run(run, tasks=load_task).records) == 4 and read_run(run, tasks=load_task).foreign == 2
        assert main(["report", str(run)]) == 0
    assert "4 distinct problems" in capsys.readouterr().out
    assert main(["report", str(run)]) == 0  # the CLI says it in one line
    warned = [line for line in capsys.readouterr().err.splitlines() if line]
    assert warned == [f"ttscale: warning: {run / 'results.jsonl'}: 2 records of problems not in the run's task left "
                      "out (as summary.json leaves them out)"]
    # A task that cannot load here (its file is gone): every record is kept, as before.
    config = json.loads((run / "config.json").read_text())
    config["identity"]["task"] = {"spec": f"jsonl:{tmp_path / 'gone.jsonl'}", "options": {}, "name": "jsonl"}
    (run / "config.json").write_text(json.dumps(config))
    assert len(read_run(run, tasks=load_task).records) == 6


# -- 9: Python values held to the rules of CLI strings -------------------------------------------------


@pytest.mark.parametrize(("params", "limit", "message"), [
    ({"n": 4.5}, None, "parameter n must be int or NoneType, got 4.5 (float)"),
    ({"n": True}, None, "parameter n must be int or NoneType, got True (bool)"),
    ({"refill": 1}, None, "parameter refill must be bool, got 1 (int)"),
    ({"max_tokens": 64.5}, None, "parameter max_tokens must be int, got 64.5 (float)"),
    ("n=4", None, "params must be a dict of names to values, got 'n=4' (str)"),
    ({}, 2.5, "limit must be a whole number or None, got 2.5 (float)"),
])
def test_api_values_of_the_wrong_type_are_refused_before_any_engine(
        tmp_path: Path, params: Any, limit: Any, message: str) -> None:
    from tests.adaptive.sim import SeededSimulator, model_dir

    sim, out = SeededSimulator(seed=0), tmp_path / "run"
    with pytest.raises(ValueError) as caught:
        ttscale.run(strategy="best_of_n", budget="400", task="arithmetic:1-3", limit=limit, params=params,
                    model=str(model_dir(tmp_path)), engine=sim, out=out)
    assert str(caught.value) == message
    assert not out.exists() and sim.requests == []  # nothing written, the engine never asked


def test_typed_parameters_convert_as_their_strings_do() -> None:
    cls = params_class(STRATEGIES.get("self_consistency"))
    parsed = parse_params(cls, {"n": 4.0, "temperature": 1})  # a JSON writer's 4.0; an int where a float goes
    assert type(parsed.n) is int and parsed.n == 4 and type(parsed.temperature) is float
    with pytest.raises(ValueError, match=r"parameter temperature must be a finite float, got nan"):
        parse_params(cls, {"temperature": float("nan")})
    with pytest.raises(ValueError, match=r"parameter verifier must be str or NoneType, got 3 \(int\)"):
        parse_params(cls, {"verifier": 3})


# -- 10: one line naming the file and the field ------------------------------------------------------


def _edit_first_record(run: Path, edit: Any) -> None:
    lines = (run / "results.jsonl").read_text().splitlines()
    record = json.loads(lines[0])
    edit(record)
    lines[0] = json.dumps(record)  # NaN and Infinity are written as Python's json writes them
    (run / "results.jsonl").write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize(("field", "edit"), [
    ("ledger.generated_tokens", lambda r: r["ledger"].update(generated_tokens=float("nan"))),
    ("ledger.generated_tokens", lambda r: r["ledger"].update(generated_tokens=float("inf"))),
    ("ledger.spent", lambda r: r["ledger"].update(spent=float("inf"))),
    ("ledger.spent", lambda r: r["ledger"].update(spent="abc")),
    # Issue 59: numbers too large to be real were an OverflowError (exit 1) in report, compare, fit and resume.
    ("ledger.spent", lambda r: r["ledger"].update(spent=1e308)),
    ("ledger.generated_tokens", lambda r: r["ledger"].update(generated_tokens=10 ** 400)),
    ("info.S", lambda r: r.update(info={**(r.get("info") or {}), "S": 10 ** 400})),
    ("ledger", lambda r: r.update(ledger=[])),
    ("samples", lambda r: r.update(samples=3)),
    ("correct", lambda r: r.update(correct="yes")),
])
def test_report_and_fit_on_a_ledger_of_the_wrong_type_name_the_file_and_the_field(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str, edit: Any) -> None:
    run = make_run(tmp_path, "sc", problems=4)
    _edit_first_record(run, edit)
    assert main(["report", str(run)]) == 2
    _one_error_line(capsys, str(run / "results.jsonl"), f"{field} is ", "arith-L1-0000")
    assert main(["fit", "--law", "coverage", "--n-boot", "20", str(run)]) == 2
    _one_error_line(capsys, str(run / "results.jsonl"), f"{field} is ")


@pytest.mark.parametrize(("file", "path", "value"), [
    ("config.json", ("identity", "budget", "limit"), "abc"),
    ("config.json", ("identity", "budget", "limit"), float("nan")),
    ("config.json", ("identity", "params"), "n=4"),
    ("config.json", ("identity", "budget"), "1k"),
    ("config.json", ("identity",), "x"),
    ("summary.json", ("wall_seconds",), "x"),
    ("summary.json", ("grader_cross_check",), 5),
])
def test_report_on_run_files_of_the_wrong_type_names_the_file_and_the_field(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], file: str, path: tuple[str, ...], value: Any) -> None:
    run = make_run(tmp_path, "sc", problems=4)
    data = json.loads((run / file).read_text())
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    (run / file).write_text(json.dumps(data))
    assert main(["report", str(run)]) == 2
    _one_error_line(capsys, str(run / file), f"{'.'.join(path)} is ")


@pytest.mark.parametrize(("path", "value", "field"), [
    (("spec", "params"), "n=4", "params must be a dict"),
    (("spec", "task"), 5, "task must be a string"),
    (("spec", "task_options"), "x", "task_options must be a dict"),
    (("spec", "limit"), "3", "limit must be a whole number"),
    (("spec",), [1], "spec is not a JSON object"),
    (("spec", "engine"), "x", "spec.engine is not a JSON object"),
    (("identity",), "x", "has no identity object"),
])
def test_resume_of_a_config_of_the_wrong_type_names_the_file_and_the_field(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], path: tuple[str, ...], value: Any, field: str) -> None:
    run = make_run(tmp_path, "sc", problems=4)
    config = json.loads((run / "config.json").read_text())
    config["spec"] = {"strategy": "self_consistency", "budget": "1k", "task": "arithmetic:1-5", "limit": 4,
                      "params": dict(config["identity"]["params"])}
    node = config
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    (run / "config.json").write_text(json.dumps(config))
    before = _snapshot(run)
    assert main(["run", "--resume", str(run), "--no-progress"]) == 2
    _one_error_line(capsys, str(run / "config.json"), field)
    assert _snapshot(run) == before
