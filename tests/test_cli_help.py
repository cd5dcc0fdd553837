"""The help the CLI prints: every command's renders, and what it says of intervals and data comes from one source."""

from __future__ import annotations

import re

import pytest

from ttscale.cli import SUBCOMMANDS, main


def _help(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    out = capsys.readouterr()
    assert exit_.value.code == 0, out.err
    return " ".join(out.out.split())  # argparse wraps lines at the terminal's width


@pytest.mark.parametrize("argv", [["--help"]] + [[name, "--help"] for name in SUBCOMMANDS])
def test_every_help_renders(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    # A bare % in a help string (plan's "80%/90% power") made `ttscale --help` itself fail.
    assert "usage: ttscale" in _help(argv, capsys)


def test_compare_help_names_the_intervals_compare_computes(capsys: pytest.CaptureFixture[str]) -> None:
    from ttscale.comparisons.paired import INTERVALS

    for argv in (["--help"], ["compare", "--help"]):
        text = _help(argv, capsys)
        assert INTERVALS in text
        # What the help said before: the comparison "with bootstrap CIs", "each with a cluster-bootstrap CI".
        assert not re.search(r"same seeds\) with bootstrap CIs|each with a cluster-bootstrap CI", text), text


@pytest.mark.parametrize("command", ["run", "compare", "sweep"])
def test_data_dir_help_is_the_loaders_layout(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    from ttscale.running.flags import data_dir_help

    assert " ".join(data_dir_help().split()) in _help([command, "--help"], capsys)
