"""compare.json as Markdown (`ttscale.comparisons.paired.markdown`, re-exported there): the rendering `ttscale compare`
prints and `ttscale report` embeds. It reads only the dict (`Comparison.to_dict()`), so a report can render an
older compare.json without the comparison's objects; kept apart from ttscale.comparisons.paired, which runs and reads
the comparisons.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ttscale.comparisons import environments


def markdown(data: Mapping[str, Any]) -> str:
    """compare.json (`Comparison.to_dict()`) as Markdown: verdicts, arms, and one table per pair."""
    method = data["method"]
    level = f"{100 * method['confidence']:g}%"
    bootstrap = f"cluster bootstrap over problems ({method['resamples']} resamples, seed {method['seed']})"
    if method.get("binary_difference"):
        how = (f"Accuracy as a difference in points with a {level} Tango score interval for paired proportions "
               f"(repeats of a problem: counts divided by their design effect); costs as a ratio of means with a "
               f"{level} percentile interval, {bootstrap}. \"No detectable difference\" is not equality.")
    else:  # compare.json written before the score interval: every interval was the bootstrap's
        how = (f"{bootstrap[0].upper()}{bootstrap[1:]}, {level} percentile intervals; accuracy as a difference in "
               "points, costs as a ratio of means.")
    lines = ["## Paired comparison", "", how, ""]
    if data.get("until_decided"):
        from ttscale.comparisons.until_decided import markdown_lines

        lines += [*markdown_lines(data["until_decided"]), ""]
    lines += [f"- {v}" for v in data["verdicts"]] + ["", "| arm | strategy | budget | run seeds | problems | "
                                                     "records | errored (problems) | from |",
                                                     "|---|---|---|---|---:|---:|---:|---|"]
    for a in data["arms"]:
        sources = ", ".join(Path(s).name for s in a.get("sources", []))
        lines.append(f"| {a['label']} | {a.get('strategy')} | {a.get('budget')} | "
                     f"{','.join(map(str, a.get('run_seeds', [])))} | {a['problems']} | {a['records']} | "
                     f"{a['errored']} ({a['errored_problems']}) | {sources} |")
    metrics = data["metrics"]
    for p in data["pairs"]:
        ex = p["excluded"]
        lines += ["", f"### {p['a']} vs {p['b']}", "",
                  f"{p['problems']} problems, {p['pairs']} pairs (paired by {p['paired_by']}); left out: "
                  f"{ex['errored_pairs']} errored pairs ({ex['errored_problems']} problems), "
                  f"{ex['unpaired']} unpaired.", *environments.markdown_lines(p),
                  "", f"| metric | {p['a']} | {p['b']} | effect [{level} CI] | |", "|---|---:|---:|---|---|"]
        for name, e in p["effects"].items():
            kind = metrics.get(name, {}).get("kind", e["kind"])
            mean_a, mean_b = (_mean(name, x) for x in (e["mean_a"], e["mean_b"]))
            if e["value"] is None or e["ci"] == [None, None]:
                effect, verdict = ("n/a" if e["value"] is None else e["text"].split(" (")[0].removeprefix(e["label"]),
                                   e.get("note") or "")
            else:
                effect = e["text"].removeprefix(e["label"]).removesuffix("(no detectable difference)")
                verdict = "detectable" if e["detectable"] else "no detectable difference"
            lines.append(f"| {e['label']} ({kind}) | {mean_a} | {mean_b} | {effect.strip()} | {verdict} |")
    return "\n".join(lines)


def _mean(name: str, x: float | None) -> str:
    if x is None:
        return "—"
    return f"{100 * x:.1f}%" if name == "accuracy" else f"{x:.4g}"


__all__ = ["markdown"]
