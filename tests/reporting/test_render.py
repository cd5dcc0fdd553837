"""`ttscale report` and the HTML / Markdown renderers, on SYNTHETIC run directories."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.reporting.report_synthetic import make_run
from ttscale.cli import main
from ttscale.reporting import load_runs, render_html, render_markdown


class _Collect(HTMLParser):
    """Rows of the leaderboard table, and every attribute that could fetch something."""

    def __init__(self) -> None:
        super().__init__()
        self.table: str | None = None
        self.rows: list[list[str]] = []
        self.fetching: list[tuple[str, str]] = []
        self._cell: list[str] | None = None
        self.svgs = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name == "xmlns" or name.startswith("xmlns:"):
                continue  # a namespace's name, never fetched
            if name.endswith("href") and (value or "").startswith("#") and tag == "use":
                continue  # a chart's marker: a shape defined in the same document (checked in test_figures)
            if name in ("src", "href") or name.endswith(":href") or (value or "").startswith(("http:", "https:", "//")):
                self.fetching.append((tag, f"{name}={value}"))
        if tag in ("link", "script", "img", "iframe"):
            self.fetching.append((tag, ""))
        if tag == "svg":
            self.svgs += 1
        if tag == "table":
            self.table = dict(attrs).get("class")
        if self.table == "leaderboard" and tag == "tr":
            self.rows.append([])
        if self.table == "leaderboard" and tag == "td":
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None:
            self.rows[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        if tag == "table":
            self.table = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data + " ")


def _two_strategies(root: Path, *, matched: bool) -> list[Path]:
    return [
        make_run(root, "sc", problems=12),
        make_run(root, "bon", strategy="best_of_n", budget="1k" if matched else "2k", problems=12),
    ]


def test_html_is_self_contained_with_one_row_per_run_carrying_its_interval(sweep: Path) -> None:
    html = render_html(load_runs(sweep), title="Sweep")
    parsed = _Collect()
    parsed.feed(html)
    assert parsed.fetching == []  # nothing to fetch: no network when opened
    assert parsed.svgs >= 3  # accuracy vs budget, Pareto, coverage
    body = [row for row in parsed.rows if row]
    assert len(body) == 6
    for row in body:
        assert re.search(r"\d+\.\d% .*\[\d+\.\d%, \d+\.\d%\] · n=20", " ".join(row)), row
    assert "<title>Sweep</title>" in html and 'id="warnings"' in html


def test_html_warns_only_when_compared_runs_are_not_budget_matched(tmp_path: Path) -> None:
    matched = render_html(load_runs(_two_strategies(tmp_path / "m", matched=True)))
    unmatched = render_html(load_runs(_two_strategies(tmp_path / "u", matched=False)))
    assert "Not budget-matched" not in matched and 'id="warnings"' not in matched
    assert "Not budget-matched" in unmatched and 'id="warnings"' in unmatched


def test_markdown_has_the_leaderboard_warning_levels_and_versions(tmp_path: Path) -> None:
    text = render_markdown(load_runs(_two_strategies(tmp_path, matched=False)), title="T")
    assert text.startswith("# T\n")
    assert "> **⚠ Warning:** Not budget-matched" in text
    rows = [line for line in text.splitlines() if re.match(r"\| [AB] \| \d \|", line)]
    assert len(rows) == 2
    assert all(re.search(r"\[\d+\.\d%, \d+\.\d%\]", row) for row in rows)
    assert "1k tokens (≈ " in text and "eFLOPs" in text
    assert "## Accuracy by difficulty level" in text and "vLLM 0.32.0" in text


def test_cli_writes_markdown_to_stdout_and_html_to_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = [str(p) for p in _two_strategies(tmp_path, matched=False)]
    assert main(["report", *runs]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# ttscale report") and "Not budget-matched" in out
    target = tmp_path / "out" / "report.html"
    assert main(["report", *runs, "--out", str(target), "--title", "Two"]) == 0
    assert target.read_text().startswith("<!doctype html>") and "<title>Two</title>" in target.read_text()
    assert "wrote" in capsys.readouterr().err
    assert main(["report", *runs, "--format", "md", "--out", str(tmp_path / "r.txt")]) == 0
    assert (tmp_path / "r.txt").read_text().startswith("# ttscale report")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["report", "{tmp}/missing"], "is not a run directory"),
        (["report", "{run}", "--out", "{tmp}/report.pdf"], "cannot tell the format"),
        (["report", "{run}", "--format", "pdf"], "invalid choice"),
        (["report"], "the following arguments are required"),
    ],
)
def test_cli_usage_errors_are_one_line_with_exit_code_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    run = make_run(tmp_path, "run", problems=2)
    code = main([a.format(tmp=tmp_path, run=run) for a in args])
    err = capsys.readouterr().err
    assert code == 2 and message in err
    assert err.count("\n") == 1 and "Traceback" not in err
