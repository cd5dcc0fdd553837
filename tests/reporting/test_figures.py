"""The charts (matplotlib, as inline SVG): well-formed, showing the data and its intervals, fitted laws only where
the data carries them. Drawn parts are found by the SVG group ids that figures.py gives them (`band-0`, `fit-0`...)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.reporting.report_synthetic import make_run
from ttscale.reporting import Svg, accuracy_vs_budget, coverage_vs_samples, load_runs, new_chart, pareto_vs_cost, to_svg
from ttscale.reporting.charts import human

NS = "{http://www.w3.org/2000/svg}"
XLINK = "{http://www.w3.org/1999/xlink}href"


def _parse(svg: str) -> ET.Element:
    assert svg.startswith("<svg") and "<?xml" not in svg and "<!DOCTYPE" not in svg  # embeddable in HTML
    root = ET.fromstring(svg)
    assert root.tag == f"{NS}svg" and root.get("class") == "plot"
    return root


def _legend(root: ET.Element) -> list[str]:
    return [t.text or "" for t in root.iter(f"{NS}text")]


def _groups(root: ET.Element, pattern: str) -> list[ET.Element]:
    """The SVG groups whose id matches `pattern` in full (matplotlib writes an artist's gid as its group's id)."""
    return [g for g in root.iter(f"{NS}g") if re.fullmatch(pattern, g.get("id") or "")]


def _markers(group: ET.Element) -> int:
    """Markers drawn in a group: matplotlib draws each as a <use> of one marker shape defined in the same SVG."""
    return len(group.findall(f".//{NS}use"))


def _dashed(group: ET.Element) -> bool:
    return all("stroke-dasharray" in (p.get("style") or "") for p in group.iter(f"{NS}path"))


def test_accuracy_vs_budget_draws_a_band_per_strategy_and_the_power_law_with_four_budgets(sweep: Path) -> None:
    problems = load_runs(sweep)
    root = _parse(accuracy_vs_budget(problems))
    texts = _legend(root)
    assert "self_consistency" in texts and "best_of_n" in texts
    assert any(t.startswith("fit: acc(C) = A − B·C^(−alpha)") for t in texts)
    assert len(_groups(root, r"band-\d+")) == 2 and len(_groups(root, r"fit-\d+-band")) == 1  # two strategies, a fit
    fits = _groups(root, r"fit-\d+")
    assert len(fits) == 1 and _dashed(fits[0])  # only self-consistency has ≥ 4 budgets
    assert sorted(_markers(g) for g in _groups(root, r"points-\d+")) == [2, 4]  # one marker per budget


def test_no_fit_is_drawn_from_fewer_than_four_budgets(sweep: Path) -> None:
    problems = load_runs(sweep)
    problems = problems[problems["run"].isin(["sc-256", "sc-2k", "bon-256"])]
    root = _parse(accuracy_vs_budget(problems))
    assert not _groups(root, r"fit-.*") and len(_groups(root, r"band-\d+")) == 1
    assert "appears once a strategy has ≥ 4 budgets" in " ".join(_legend(root))  # the note, wrapped


def test_a_single_budget_shows_its_interval_as_an_error_bar(tmp_path: Path) -> None:
    make_run(tmp_path, "only", problems=6)
    root = _parse(accuracy_vs_budget(load_runs(tmp_path)))
    (points,) = _groups(root, r"points-\d+")
    assert _markers(points) == 1
    assert len(_groups(root, r"points-\d+-bars-\d+")) == 3  # the bar and its two caps
    assert not _groups(root, r"band-.*")


def test_pareto_uses_eflops_when_priced_and_tokens_otherwise(sweep: Path, tmp_path: Path) -> None:
    problems = load_runs(sweep)
    root = _parse(pareto_vs_cost(problems))
    assert "eFLOPs" in (root.findtext(f"{NS}title") or "")
    assert sum(_markers(g) for g in _groups(root, r"points-\d+")) == 6
    assert "Pareto frontier" in _legend(root)
    make_run(tmp_path, "plain", problems=4, priced=False)
    make_run(tmp_path, "plain-2k", budget="2k", problems=4, priced=False)
    unpriced = _parse(pareto_vs_cost(load_runs(tmp_path)))
    assert "no eFLOPs priced" in (unpriced.findtext(f"{NS}title") or "")


def test_the_pareto_step_line_runs_through_the_frontier_runs_only(sweep: Path) -> None:
    runs = load_runs(sweep, per="run")
    root = _parse(pareto_vs_cost(load_runs(sweep)))
    (frontier,) = _groups(root, "frontier")
    (path,) = frontier.iter(f"{NS}path")
    assert not _dashed(frontier)
    vertices = len(re.findall(r"[ML] ", path.get("d") or ""))
    best_so_far, on_front = -1.0, 0
    for _, row in runs.sort_values(["mean_eflops", "accuracy"], ascending=[True, False]).iterrows():
        if row["accuracy"] > best_so_far:
            best_so_far, on_front = row["accuracy"], on_front + 1
    assert vertices == 2 * on_front - 1  # a step line: one corner between each pair of frontier points


def test_coverage_draws_one_curve_per_strategy_from_its_deepest_pools(sweep: Path, tmp_path: Path) -> None:
    svg = coverage_vs_samples(load_runs(sweep))
    assert svg is not None
    root = _parse(svg)
    texts = _legend(root)
    assert "self_consistency (sc-2k)" in texts and "best_of_n (bon-2k)" in texts
    assert len(_groups(root, r"curve-\d+")) == 2
    make_run(tmp_path, "tiny", strategy="best_of_n", budget="64", problems=3)  # one sample each: no curve
    assert coverage_vs_samples(load_runs(tmp_path)) is None


def test_chart_scales_ticks_and_escaping() -> None:
    fig, ax = new_chart(title="a < b & c $x$", x_label="x")
    ax.plot([100, 1000, 10000], [0.1, 0.5, 0.9], color="#000", label="<s>")
    ax.errorbar([100], [0.1], yerr=[[0.1], [0.2]], fmt="o", color="#000")
    svg = to_svg(fig)
    assert isinstance(svg, Svg) and svg._repr_svg_() == str(svg)  # what Jupyter displays
    root = _parse(svg)  # parses: the title and label were escaped
    texts = _legend(root)
    assert "a < b & c $x$" in texts and "<s>" in texts  # a '$' is a character, not mathtext
    assert {"100", "1k", "10k"} <= set(texts) and {"0%", "100%"} <= set(texts)
    with pytest.raises(ValueError, match="at least one point"):
        to_svg(new_chart(title="empty", x_label="x")[0])
    # Points outside a log axis are masked, never drawn at its edge.
    fig, ax = new_chart(title="t", x_label="x")
    ax.plot([0, 10], [0.5, 0.5], linestyle="none", marker="o", gid="odd")
    (odd,) = _groups(_parse(to_svg(fig)), "odd")
    assert _markers(odd) == 1


def test_the_same_chart_is_the_same_svg(sweep: Path) -> None:
    problems = load_runs(sweep)
    assert accuracy_vs_budget(problems) == accuracy_vs_budget(problems)  # no date, ids from a fixed salt


@pytest.mark.parametrize(
    ("value", "text"), [(512, "512"), (1000, "1k"), (2500, "2.5k"), (3.2e11, "3.2e11"), (1e6, "1e6"), (0.25, "0.25")]
)
def test_human_numbers(value: float, text: str) -> None:
    assert human(value) == text


def test_svg_has_no_external_references(sweep: Path) -> None:
    svg = accuracy_vs_budget(load_runs(sweep))
    assert not re.search(
        r"\bsrc=|https?:|file:|data:",
        svg.replace('xmlns="http://www.w3.org/2000/svg"', "").replace('xmlns:xlink="http://www.w3.org/1999/xlink"', ""),
    )  # namespaces name the vocabulary; nothing else is a URL
    root = _parse(svg)
    ids = {e.get("id") for e in root.iter()}
    # matplotlib draws markers as <use> of a shape, and clips to a clip path: references inside the document only.
    links = [e.get(XLINK) or e.get("href") for e in root.iter() if e.get(XLINK) or e.get("href")]
    urls = re.findall(r"url\(([^)]*)\)", svg)
    assert links and urls
    assert all(link.startswith("#") and link[1:] in ids for link in links)
    assert all(url.startswith("#") and url[1:] in ids for url in urls)


def test_charts_on_one_page_share_no_referenced_ids(sweep: Path) -> None:
    problems = load_runs(sweep)
    charts = [accuracy_vs_budget(problems), pareto_vs_cost(problems), coverage_vs_samples(problems)]
    referenced = [set(re.findall(r'(?:href="|url\()#([^")]+)', str(svg))) for svg in charts]
    assert all(referenced)  # every chart clips to its plot and draws markers
    assert (
        not (referenced[0] & referenced[1])
        and not (referenced[0] & referenced[2])
        and not (referenced[1] & referenced[2])
    )
