"""The paired comparisons (compare.json, written by `ttscale compare`) found under a report's paths.

A report shows them beside the leaderboard: the leaderboard ranks runs, a comparison says with its paired
intervals whether two strategies differ. compare.json describes itself (ttscale.comparisons.paired), so the rendering
here needs nothing but the file and the shared Markdown tables.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ttscale.comparisons.paired import COMPARE, FORMAT, markdown
from ttscale.runstore.runfiles import parse_json
from ttscale.runstore.runs import RunLoadError


def find_comparisons(paths: str | Path | Iterable[str | Path]) -> list[dict[str, Any]]:
    """Every compare.json in or below `paths`, read, in path order, once each (a malformed one: RunLoadError)."""
    items = [paths] if isinstance(paths, str | Path) else list(paths)
    found: list[Path] = []
    for item in map(Path, items):
        if item.is_dir():
            found.extend(sorted(item.rglob(COMPARE)))
    out = []
    for path in dict.fromkeys(p.resolve() for p in found):
        try:
            data = parse_json(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:  # a decoding error, bad JSON, JSON nested too deeply
            raise RunLoadError(f"{str(path)!r} cannot be read as a comparison: {exc}") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT or not {"pairs", "verdicts"} <= set(data):
            raise RunLoadError(f"{str(path)!r} is not a ttscale comparison (format {FORMAT!r} with pairs and verdicts)")
        out.append({**data, "path": str(path)})
    return out


def comparison_markdown(data: dict[str, Any]) -> str:
    """One comparison as Markdown (the tables `ttscale compare` prints)."""
    return markdown(data)


def comparison_view(data: dict[str, Any]) -> dict[str, Any]:
    """One comparison as the HTML template's cells: its verdicts, then per pair a row per metric."""
    method = data.get("method") or {}
    level = f"{100 * float(method.get('confidence', 0.95)):g}%"
    pairs = []
    for pair in data["pairs"]:
        rows = []
        for effect in (pair.get("effects") or {}).values():
            bounded = effect.get("value") is not None and effect.get("ci") not in (None, [None, None])
            rows.append({
                "metric": effect.get("label", ""),
                "text": str(effect.get("text", "")).removeprefix(str(effect.get("label", ""))).strip(),
                "detectable": bool(effect.get("detectable")) and bounded,
            })
        pairs.append({"title": f"{pair.get('a')} vs {pair.get('b')}", "problems": pair.get("problems"),
                      "pairs": pair.get("pairs"), "rows": rows})
    return {"path": data["path"], "verdicts": list(data["verdicts"]), "pairs": pairs, "level": level,
            "resamples": method.get("resamples")}


__all__ = ["comparison_markdown", "comparison_view", "find_comparisons"]
