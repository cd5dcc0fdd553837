"""Issue 43, items 13 and 15 (one message): what the readers of a run do with a stored file edited by hand.

- 13: `--resume` reads results.jsonl through the one reader `report` uses: a record whose fields have the wrong type
  is the one line "…: the record of problem …: … (fix or delete that line)", exit 2, before anything runs;
- 15: a config.json nested 200,000 deep is one clear line from `report`, not a RecursionError.

Runs use a loopback stub server (tests/hostile/stub_server.py) or the simulator: no model, no vLLM.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.hostile.stub_server import StubServer
from tests.hostile.test_run_files import _stub
from ttscale.cli import main
from ttscale.runstore.storage import CONFIG, RESULTS

EDITS: list[tuple[str, Callable[[dict[str, Any]], None]]] = [
    ("ledger", lambda r: r.update(ledger="x")),
    ("samples", lambda r: r.update(samples=5)),
    ("ledger.generated_tokens", lambda r: r["ledger"].update(generated_tokens=float("inf"))),
    ("ledger.calls", lambda r: r["ledger"].update(calls=-1)),
    ("samples[0]", lambda r: r.update(samples=["a"])),
    ("correct", lambda r: r.update(correct="yes")),
]


def _args(out: Path, url: str, *more: str) -> list[str]:
    return ["run", "--strategy", "sc", "--budget", "64", "--param", "max_tokens=32", "--param", "n=2", "--limit", "3",
            "--backend", "openai", "--base-url", url, "--model", "smol", "--tokenizer", "embedded", "--no-progress",
            *more, "--out", str(out)]


@pytest.mark.parametrize(("field", "edit"), EDITS, ids=[f for f, _ in EDITS])
def test_resume_refuses_an_edited_record_with_the_line_report_gives(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str, edit: Callable[[dict[str, Any]], None]
) -> None:
    out = tmp_path / "run"
    with StubServer(_stub) as server:
        assert main(_args(out, server.url)) == 0
        lines = (out / RESULTS).read_text().splitlines()
        record = json.loads(lines[1])
        edit(record)
        lines[1] = json.dumps(record)
        (out / RESULTS).write_text("\n".join(lines[:2]) + "\n")  # the third problem is left to the resume
        before = (out / RESULTS).read_bytes()
        capsys.readouterr()
        assert main(["report", str(out)]) == 2
        said = capsys.readouterr().err.strip()
        asked = len(server.requests)
        assert main(["run", "--resume", str(out), "--no-progress"]) == 2
        err = capsys.readouterr().err
        assert len(server.requests) == asked  # refused before anything ran
    lines_err = [line for line in err.splitlines() if line.strip()]
    assert len(lines_err) == 1 and "Traceback" not in err, err
    assert f"the record of problem {record['id']!r}: {field} " in lines_err[0], lines_err
    assert lines_err[0].endswith("(fix or delete that line)"), lines_err
    assert said == lines_err[0], (said, lines_err[0])  # one reader, one message
    assert (out / RESULTS).read_bytes() == before  # nothing cut, nothing appended


@pytest.mark.parametrize("name", [CONFIG, "summary.json", "compare.json"])
def test_report_on_a_file_nested_too_deeply_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        name: str) -> None:
    from tests.reporting.report_synthetic import make_run

    run = make_run(tmp_path, "sc", problems=4)
    depth = 200_000
    (run / name).write_text("[" * depth + "]" * depth)
    assert main(["report", str(run)]) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "RecursionError" not in err and "Traceback" not in err, err
    assert str(run / name) in lines[0] and "nested too deeply" in lines[0], lines
