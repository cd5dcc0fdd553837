"""Issue 43, items 2, 3 and 15 (one message): where `--out` may write, for every command.

- 2: one list of every file the toolkit writes (ttscale.runstore.names.TOOLKIT_FILES), and no `--out` of any command
  writes over one of them (stages.jsonl, allocate.json, table.json, search.json, trials.jsonl, ...);
- 3: `sweep --out` refuses a run or a non-empty folder that is not a sweep; `compare --out` refuses a folder that is
  not a comparison it made (a user's compare.json is never replaced);
- 15: `compare --out RUN/results.jsonl` (a file, not a folder) is one clear line.

Everything runs on the SIMULATOR (ttscale.testing.policy): no model, no vLLM.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ttscale
from tests.adaptive.sim import SeededSimulator, model_dir
from ttscale.cli import main
from ttscale.runstore.names import TOOLKIT_FILES
from ttscale.testing.policy import SimulatedArithmeticPolicy


def _tree(root: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _one_error_line(capsys: pytest.CaptureFixture[str], *needles: str) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("ttscale: error: "), err
    assert "Traceback" not in err and "Error:" not in lines[0], err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


@pytest.fixture(scope="module")
def allocation(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An allocation search over a stateful task: allocate.json, table.json, trial logs (search.json,
    trials.jsonl) and a sweep whose cells are runs with stages.jsonl."""
    out = tmp_path_factory.mktemp("alloc") / "search"
    ttscale.allocate(space="sleep_time", proposers=("grid",), seeds=(0,), trials=2, limit=3,
                     engine=SimulatedArithmeticPolicy(seed=1), out=out, total_budget=100,
                     settings={"sleep": (0, 40), "budgets": (32, 64), "queries": 3, "max_tokens": 32},
                     task="arithmetic_stateful:1", task_options={"queries": 3})
    return out


# -- 2: one list, every --out ----------------------------------------------------------------------


def test_the_one_list_names_every_file_the_toolkit_writes(allocation: Path) -> None:
    names = {p.name for p in allocation.rglob("*") if p.is_file()}
    for needed in ("stages.jsonl", "allocate.json", "table.json", "search.json", "trials.jsonl", "sweep.json",
                   "config.json", "results.jsonl", "summary.json", ".lock"):
        assert needed in names, sorted(names)  # the fixture writes each kind of file
    assert names <= TOOLKIT_FILES, sorted(names - TOOLKIT_FILES)


def test_no_out_of_any_command_writes_over_a_file_the_toolkit_wrote(
    allocation: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _tree(allocation)
    cell = next(p.parent for p in allocation.rglob("stages.jsonl"))
    elsewhere = tmp_path / "runs"
    elsewhere.mkdir()
    for target in before:
        # The tree itself as the input, and as a stranger to an input elsewhere (not under it).
        for inputs in ([str(allocation)], [str(elsewhere)]):
            assert main(["report", *inputs, "--format", "md", "--out", str(target)]) == 2, target
            _one_error_line(capsys, "--out", "write elsewhere")
            with pytest.raises(ValueError, match="write elsewhere"):
                ttscale.report(inputs, out=target, format="md")
        assert main(["fit", "--law", "coverage", "--n-boot", "20", str(cell), "--plot", str(target)]) == 2, target
        _one_error_line(capsys, "--plot", "write elsewhere")
    assert _tree(allocation) == before


def test_a_report_beside_the_toolkit_files_is_an_ordinary_output(allocation: Path) -> None:
    cell = next(p.parent for p in allocation.rglob("stages.jsonl"))
    out = cell / "report.md"
    try:
        assert main(["report", str(cell), "--out", str(out)]) == 0
        assert out.read_text().startswith("#")
    finally:
        out.unlink(missing_ok=True)


# -- 3: sweep --out and compare --out --------------------------------------------------------------


def _sweep_args(out: Path, tmp_path: Path) -> list[str]:
    return ["sweep", "--strategy", "best_of_n max_tokens=40", "--budgets", "80", "--task", "arithmetic:1-3",
            "--limit", "2", "--model", str(model_dir(tmp_path)), "--out", str(out)]


def _run(tmp_path: Path, out: Path, strategy: str = "best_of_n") -> Path:
    ttscale.run(strategy=strategy, budget="160", task="arithmetic:1-3", limit=2, params={"max_tokens": 40},
                model=str(model_dir(tmp_path)), engine=SeededSimulator(seed=1), out=out)
    return out


def test_sweep_out_refuses_a_run_and_a_folder_of_other_files(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    run = _run(tmp_path, tmp_path / "run")
    capsys.readouterr()  # the run's own warnings
    own = tmp_path / "mine"
    own.mkdir()
    (own / "notes.txt").write_text("mine\n")
    for out, said in ((run, "is a ttscale run"), (own, "is not empty and not a ttscale sweep")):
        before = _tree(out)
        assert main(_sweep_args(out, tmp_path)) == 2, out
        _one_error_line(capsys, str(out), said)
        with pytest.raises(ValueError, match=said):
            ttscale.sweep(strategies=["best_of_n max_tokens=40"], budgets=["80"], task="arithmetic:1-3", limit=2,
                          model=str(model_dir(tmp_path)), engine=SeededSimulator(seed=1), out=out)
        assert _tree(out) == before  # nothing written, nothing made


def test_a_sweep_still_resumes_in_its_own_folder_and_starts_in_an_empty_one(tmp_path: Path) -> None:
    kwargs = {"strategies": ["best_of_n max_tokens=40"], "budgets": ["80"], "task": "arithmetic:1-3", "limit": 2,
              "model": str(model_dir(tmp_path))}
    empty = tmp_path / "empty"
    empty.mkdir()
    ttscale.sweep(**kwargs, engine=SeededSimulator(seed=1), out=empty)
    assert (empty / "sweep.json").is_file()
    cells = _tree(empty / "cells")
    ttscale.sweep(**kwargs, engine=SeededSimulator(seed=1), out=empty)  # its own folder: resumed, not refused
    assert _tree(empty / "cells") == cells  # every cell was finished: read back as it was


def test_compare_out_never_replaces_a_users_compare_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = _run(tmp_path, tmp_path / "a"), _run(tmp_path, tmp_path / "b", "self_consistency")
    capsys.readouterr()  # the runs' own warnings
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "compare.json").write_text('{"my": "notes"}\n')
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine\n")
    for out in (mine, other, a):
        before = _tree(out)
        assert main(["compare", str(a), str(b), "--out", str(out)]) == 2, out
        _one_error_line(capsys, str(out), "--out")
        assert _tree(out) == before
    made = tmp_path / "made"
    assert main(["compare", str(a), str(b), "--out", str(made)]) == 0
    capsys.readouterr()
    first = json.loads((made / "compare.json").read_text())
    assert main(["compare", str(a), str(b), "--out", str(made)]) == 0  # its own comparison: written again
    assert json.loads((made / "compare.json").read_text())["format"] == first["format"]


def test_compare_out_at_a_file_is_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = _run(tmp_path, tmp_path / "a"), _run(tmp_path, tmp_path / "b", "self_consistency")
    capsys.readouterr()  # the runs' own warnings
    before = _tree(a)
    for out in (a / "results.jsonl", a / "config.json"):
        assert main(["compare", str(a), str(b), "--out", str(out)]) == 2, out
        line = _one_error_line(capsys, str(out), "not a folder")
        assert "File exists" not in line, line
    assert _tree(a) == before


def test_sweep_and_allocate_out_at_a_file_or_a_run_are_one_clear_line(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    run = _run(tmp_path, tmp_path / "run")
    capsys.readouterr()  # the run's own warnings
    before = _tree(run)
    for out in (run / "results.jsonl", run):
        said = "is a file, not a folder" if out.is_file() else "is a ttscale run"
        assert main(_sweep_args(out, tmp_path)) == 2, out
        _one_error_line(capsys, str(out), said)
        with pytest.raises(ValueError, match=said):
            ttscale.allocate(space="genrm", total_budget=256, engine=SimulatedArithmeticPolicy(), out=out, limit=2,
                             settings={"solutions": (1, 2), "verifications": (1,), "max_tokens": 32,
                                       "verify_tokens": 16})
    assert _tree(run) == before


def test_no_out_writes_over_a_comparisons_state_of_its_looks(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    # until_decided.json holds a sequential comparison's looks as read (resuming it continues from them): one of the
    # toolkit's files, so `report --out` refuses it as it refuses compare.json beside it.
    from ttscale.comparisons.paired import compare

    root = tmp_path / "cmp"
    compare(strategies=["best_of_n n=1 max_tokens=40", "best_of_n n=1 max_tokens=2"], repeats=1, budget="400",
            task="arithmetic:1-3", model=str(model_dir(tmp_path)), out=root, engine=SeededSimulator(seed=1),
            progress=False, log=lambda _: None, until_decided="better:0", max_problems=12, batch=6)
    before = _tree(root)
    assert root / "until_decided.json" in before
    for target in (root / "until_decided.json", root / "compare.json"):
        assert main(["report", str(next(root.glob("cells/*"))), "--format", "md", "--out", str(target)]) == 2
        _one_error_line(capsys, f"is {target.name} of the ttscale directory")
    assert _tree(root) == before
