"""Allocation searches (`ttscale allocate`: allocate.json and table.json) found under a report's paths.

A report shows each beside the leaderboard (whose rows include the search's sweep cells): the proposers' trials
to the grid's optimum, and the curve AgentTTS plots, the best accuracy found after k trials per proposer against
the optimum over every feasible allocation.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ttscale.runstore.names import ALLOCATION as MANIFEST
from ttscale.runstore.names import ALLOCATION_TABLE as TABLE
from ttscale.runstore.runfiles import parse_json
from ttscale.runstore.runs import RunLoadError


def find_allocations(paths: str | Path | Iterable[str | Path]) -> list[dict[str, Any]]:
    """Every finished allocation search in or below `paths` (a table.json beside an allocate.json), read once."""
    items = [paths] if isinstance(paths, str | Path) else list(paths)
    found: list[Path] = []
    for item in map(Path, items):
        if item.is_dir():
            found.extend(p for p in sorted(item.rglob(TABLE)) if (p.parent / MANIFEST).is_file())
    out = []
    for path in dict.fromkeys(p.resolve() for p in found):
        try:
            table = parse_json(path.read_text(encoding="utf-8"))
            manifest = parse_json((path.parent / MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:  # a decoding error, bad JSON, JSON nested too deeply
            raise RunLoadError(f"{str(path)!r} cannot be read as an allocation search: {exc}") from None
        if not isinstance(table, dict) or not {"space", "optimum", "rows", "cap"} <= set(table):
            raise RunLoadError(f"{str(path)!r} is not a ttscale allocation search table")
        out.append({**table, "manifest": manifest, "path": str(path.parent)})
    return out


def allocation_rows(data: dict[str, Any]) -> tuple[str, list[str], list[list[str]]]:
    """(the summary line, the table's head, its rows: per proposer the trials to the grid's optimum and the best
    accuracy found after k trials)."""
    best = data["optimum"]
    alloc = ", ".join(f"{k}={v}" for k, v in best["allocation"].items())
    manifest = data.get("manifest") or {}
    cap = int(data["cap"])
    ks = [k for k in (1, 2, 5, 10) if k < cap] + [cap]
    summary = (f"Task {manifest.get('task', '?')}, {best.get('n', '?')} problems; {data['points']} feasible "
               f"allocations; grid optimum {alloc} at {100 * best['accuracy']:.1f}% [{100 * best['ci_low']:.1f}, "
               f"{100 * best['ci_high']:.1f}], {best['cost']:.0f} tokens per problem; {cap} trials per search.")
    head = ["proposer", "searches", "trials to optimum: median [min, max]", "reached", *(f"best@{k}" for k in ks),
            "invalid", "fallbacks"]

    def show(value: Any) -> str:
        return f"> {cap}" if value is None else f"{value:g}"

    rows = []
    for row in data["rows"]:
        to, curve = row["trials_to_optimum"], row.get("curve") or []
        rows.append([row["label"], str(row["runs"]), f"{show(to['median'])} [{show(to['min'])}, {show(to['max'])}]",
                     f"{sum(r is not None for r in row['reached'])}/{row['runs']}",
                     *(f"{100 * curve[min(k, len(curve)) - 1]:.1f}%" if curve else "–" for k in ks),
                     str(row["invalid"]), str(row["fallbacks"])])
    return summary, head, rows


def allocation_markdown(data: dict[str, Any]) -> str:
    """One search as Markdown (`allocation_rows`)."""
    summary, head, rows = allocation_rows(data)
    lines = [f"## Allocation search: {data['space']}", "", summary, "", "| " + " | ".join(head) + " |",
             "|---" * len(head) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def allocation_view(data: dict[str, Any]) -> dict[str, Any]:
    """One search as the HTML template's cells, with its chart."""
    summary, head, rows = allocation_rows(data)
    return {"space": data["space"], "summary": summary, "head": head, "rows": rows, "path": data["path"],
            "chart": trials_chart(data)}


def trials_chart(data: dict[str, Any]) -> str:
    """The best accuracy found after k trials, per proposer (mean over its searches), and the grid's optimum."""
    from ttscale.reporting.charts import PALETTE, new_chart, to_svg

    fig, ax = new_chart(title=f"Allocation search: {data['space']}", x_label="trials", log_x=False)
    for i, row in enumerate(data["rows"]):
        curve = row.get("curve") or []
        if curve:
            ax.plot(range(1, len(curve) + 1), curve, marker="o", color=PALETTE[i % len(PALETTE)], label=row["label"])
    ax.axhline(data["optimum"]["accuracy"], color="#555555", linestyle="--", label="grid optimum")
    return str(to_svg(fig, note=f"{data['points']} feasible allocations; mean over each proposer's search seeds"))
