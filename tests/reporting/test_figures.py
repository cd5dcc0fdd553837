"""The SVG charts: well-formed, showing the data and its intervals, fitted laws only where the data carries them."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.reporting.report_synthetic import make_run
from ttscale.reporting import Chart, accuracy_vs_budget, coverage_vs_samples, load_runs, pareto_vs_cost
from ttscale.reporting.svg import human

NS = "{http://www.w3.org/2000/svg}"


def _parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == f"{NS}svg"
    return root


def _legend(root: ET.Element) -> list[str]:
    return [t.text or "" for t in root.iter(f"{NS}text")]


def test_accuracy_vs_budget_draws_a_band_per_strategy_and_the_power_law_with_four_budgets(sweep: Path) -> None:
    problems = load_runs(sweep)
    root = _parse(accuracy_vs_budget(problems))
    texts = _legend(root)
    assert "self_consistency" in texts and "best_of_n" in texts
    assert any(t.startswith("fit: acc(C) = A − B·C^(−alpha)") for t in texts)
    bands = root.findall(f"{NS}polygon")
    assert len(bands) >= 3  # two strategy bands + the fit's band
    dashed = [p for p in root.iter(f"{NS}polyline") if p.get("stroke-dasharray")]
    assert len(dashed) == 1  # only self-consistency has ≥ 4 budgets


def test_no_fit_is_drawn_from_fewer_than_four_budgets(sweep: Path) -> None:
    problems = load_runs(sweep)
    problems = problems[problems["run"].isin(["sc-256", "sc-2k", "bon-256"])]
    root = _parse(accuracy_vs_budget(problems))
    assert not [p for p in root.iter(f"{NS}polyline") if p.get("stroke-dasharray")]
    assert "appears once a strategy has ≥ 4 budgets" in " ".join(_legend(root))  # the note, wrapped


def test_a_single_budget_shows_its_interval_as_an_error_bar(tmp_path: Path) -> None:
    make_run(tmp_path, "only", problems=6)
    root = _parse(accuracy_vs_budget(load_runs(tmp_path)))
    assert len(root.findall(f"{NS}circle")) == 1
    assert len(root.findall(f"{NS}line")) > 3 and not root.findall(f"{NS}polygon")


def test_pareto_uses_eflops_when_priced_and_tokens_otherwise(sweep: Path, tmp_path: Path) -> None:
    problems = load_runs(sweep)
    root = _parse(pareto_vs_cost(problems))
    assert "eFLOPs" in (root.findtext(f"{NS}title") or "")
    assert len(root.findall(f"{NS}circle")) == 6
    assert "Pareto frontier" in _legend(root)
    make_run(tmp_path, "plain", problems=4, priced=False)
    make_run(tmp_path, "plain-2k", budget="2k", problems=4, priced=False)
    unpriced = _parse(pareto_vs_cost(load_runs(tmp_path)))
    assert "no eFLOPs priced" in (unpriced.findtext(f"{NS}title") or "")


def test_the_pareto_step_line_runs_through_the_frontier_runs_only(sweep: Path) -> None:
    runs = load_runs(sweep, per="run")
    root = _parse(pareto_vs_cost(load_runs(sweep)))
    frontier = [p for p in root.iter(f"{NS}polyline") if p.get("stroke") == "#222222" and not p.get("stroke-dasharray")]
    assert len(frontier) == 1
    vertices = len((frontier[0].get("points") or "").split())
    best_so_far, on_front = -1.0, 0
    for _, row in runs.sort_values(["mean_eflops", "accuracy"], ascending=[True, False]).iterrows():
        if row["accuracy"] > best_so_far:
            best_so_far, on_front = row["accuracy"], on_front + 1
    assert vertices == 2 * on_front - 1  # a step line: one corner between each pair of frontier points


def test_coverage_draws_one_curve_per_strategy_from_its_deepest_pools(sweep: Path, tmp_path: Path) -> None:
    svg = coverage_vs_samples(load_runs(sweep))
    assert svg is not None
    texts = _legend(_parse(svg))
    assert "self_consistency (sc-2k)" in texts and "best_of_n (bon-2k)" in texts
    make_run(tmp_path, "tiny", strategy="best_of_n", budget="64", problems=3)  # one sample each: no curve
    assert coverage_vs_samples(load_runs(tmp_path)) is None


def test_chart_scales_ticks_and_escaping() -> None:
    chart = Chart(title="a < b & c", x_label="x")
    chart.line(x=[100, 1000, 10000], y=[0.1, 0.5, 0.9], color="#000", label="<s>")
    chart.points(x=[100], y=[0.1], low=[0.0], high=[0.3], color="#000")
    root = _parse(chart.render())  # parses: the title and label were escaped
    texts = _legend(root)
    assert "a < b & c" in texts and "<s>" in texts
    assert {"100", "1k", "10k"} <= set(texts) and {"0%", "100%"} <= set(texts)
    with pytest.raises(ValueError, match="at least one point"):
        Chart(title="empty", x_label="x").render()
    # Points outside a log axis are dropped, never drawn at -inf.
    odd = Chart(title="t", x_label="x")
    odd.points(x=[0, 10], y=[0.5, 0.5], color="#000")
    assert len(_parse(odd.render()).findall(f"{NS}circle")) == 1


@pytest.mark.parametrize(
    ("value", "text"), [(512, "512"), (1000, "1k"), (2500, "2.5k"), (3.2e11, "3.2e11"), (1e6, "1e6"), (0.25, "0.25")]
)
def test_human_numbers(value: float, text: str) -> None:
    assert human(value) == text


def test_svg_has_no_external_references(sweep: Path) -> None:
    svg = accuracy_vs_budget(load_runs(sweep))
    assert not re.search(r"(href|src)=", svg)
