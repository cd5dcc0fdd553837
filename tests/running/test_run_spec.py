"""`ttscale run --help` names every task the registry holds (issue 43, item 16: a list written by hand named
only the math tasks)."""

from __future__ import annotations

import pytest

from ttscale.cli import main
from ttscale.evals import TASKS


def test_run_help_lists_every_registered_task(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
                                              ) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # one line per option: a name is never broken by the wrapping
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "--help"])
    assert exit_info.value.code == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if line.lstrip().startswith("--task TASK"))
    listed = line.split(":", 1)[1].split(";")[0].replace(",", " ").split()
    assert listed == sorted(TASKS.names())
    assert {"code", "code_jsonl", "humaneval", "arithmetic_stateful", "gsm8k_stateful", "arithmetic"} <= set(listed)
