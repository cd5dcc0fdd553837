"""A small SVG chart: log or linear x, accuracy-style y, lines, bands, points with error bars, a legend.

Hand-written rather than matplotlib so that a report is one self-contained, crisp, text file and
the report needs no plotting library (notebooks show the same charts through `_repr_svg_`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from html import escape

#: Okabe–Ito: distinguishable with the common colour-vision deficiencies.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#7F7F7F", "#000000")
FONT = "system-ui, -apple-system, 'Segoe UI', 'DejaVu Sans', sans-serif"


class Svg(str):
    """SVG markup that Jupyter displays as a picture."""

    def _repr_svg_(self) -> str:
        return str(self)


@dataclass
class Chart:
    """Build with the `line`/`band`/`points`/`text` calls, then `render()`."""

    title: str
    x_label: str
    y_label: str = "accuracy"
    log_x: bool = True
    y_range: tuple[float, float] | None = (0.0, 1.0)
    """Fixed y limits (accuracy); None fits the data."""
    y_percent: bool = True
    width: int = 560
    height: int = 360
    _items: list[tuple[str, dict[str, object]]] = field(default_factory=list)
    _legend: list[tuple[str, str, bool]] = field(default_factory=list)
    _notes: list[str] = field(default_factory=list)

    # -- content ---------------------------------------------------------------------------------
    def line(
        self,
        *,
        x: Iterable[float],
        y: Iterable[float],
        color: str,
        dash: bool = False,
        step: bool = False,
        label: str | None = None,
        width: float = 2.0,
    ) -> None:
        """A polyline (`step`: hold each level until the next x, as a frontier does)."""
        self._items.append(
            ("line", {"xs": _floats(x), "ys": _floats(y), "color": color, "dash": dash, "step": step, "width": width})
        )
        self._add_legend(label, color, dash)

    def band(
        self, *, x: Iterable[float], low: Iterable[float], high: Iterable[float], color: str, opacity: float = 0.18
    ) -> None:
        """A shaded interval between two curves (a confidence band)."""
        self._items.append(
            ("band", {"xs": _floats(x), "low": _floats(low), "high": _floats(high), "color": color, "opacity": opacity})
        )

    def points(
        self,
        *,
        x: Iterable[float],
        y: Iterable[float],
        color: str,
        low: Iterable[float] | None = None,
        high: Iterable[float] | None = None,
        label: str | None = None,
        hollow: bool = False,
    ) -> None:
        """Markers, with vertical error bars from `low` to `high` when given."""
        self._items.append(
            (
                "points",
                {
                    "xs": _floats(x),
                    "ys": _floats(y),
                    "color": color,
                    "hollow": hollow,
                    "low": None if low is None else _floats(low),
                    "high": None if high is None else _floats(high),
                },
            )
        )
        self._add_legend(label, color, False)

    def note(self, text: str) -> None:
        """Small print under the plot (what a fit is, why something is missing), wrapped to the width."""
        per_line = max(20, int((self.width - 70) / 5.6))  # ~5.6 px per character at 10.5 px
        line = ""
        for word in text.split():
            if line and len(line) + 1 + len(word) > per_line:
                self._notes.append(line)
                line = word
            else:
                line = f"{line} {word}".strip()
        if line:
            self._notes.append(line)

    def legend(self, label: str, *, color: str, dash: bool = False) -> None:
        """A legend entry without a drawing of its own (one entry for several fitted curves)."""
        self._add_legend(label, color, dash)

    def _add_legend(self, label: str | None, color: str, dash: bool) -> None:
        if label and all(entry[0] != label for entry in self._legend):
            self._legend.append((label, color, dash))

    # -- drawing ---------------------------------------------------------------------------------
    def render(self) -> Svg:
        xs = [x for kind, item in self._items for x in _floats(item["xs"]) if not (self.log_x and x <= 0)]
        if not xs:
            raise ValueError("a chart needs at least one point")
        x_lo, x_hi = _x_limits(min(xs), max(xs), log=self.log_x)
        y_lo, y_hi = self.y_range or _y_limits(self._all_y())
        legend_rows = math.ceil(len(self._legend) / 2)
        left, right, top = 62, 16, 34
        bottom = 46 + 18 * legend_rows + 15 * len(self._notes)
        plot_w, plot_h = self.width - left - right, self.height - top - bottom

        def sx(x: float) -> float:
            t = (
                (math.log10(x) - math.log10(x_lo)) / (math.log10(x_hi) - math.log10(x_lo))
                if self.log_x
                else (x - x_lo) / (x_hi - x_lo)
            )
            return left + t * plot_w

        def sy(y: float) -> float:
            return top + (1 - (min(max(y, y_lo), y_hi) - y_lo) / (y_hi - y_lo)) * plot_h

        out = [
            f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" role="img" viewBox="0 0 {self.width} '
            f'{self.height}" width="{self.width}" height="{self.height}" font-family="{FONT}" font-size="12">',
            f"<title>{escape(self.title)}</title>",
            f'<rect x="0" y="0" width="{self.width}" height="{self.height}" fill="#ffffff"/>',
            f'<text x="{left}" y="20" font-size="14" font-weight="600" fill="#222">{escape(self.title)}</text>',
        ]
        for value in _y_ticks(y_lo, y_hi):
            y = sy(value)
            label = f"{value:.0%}" if self.y_percent else f"{value:.3g}"
            out.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e6e6e6"/>')
            out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" fill="#444">{label}</text>')
        for value, major in _x_ticks(x_lo, x_hi, log=self.log_x):
            x = sx(value)
            out.append(
                f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{top + plot_h}" '
                f'stroke="{"#e6e6e6" if major else "#f3f3f3"}"/>'
            )
            if major:
                out.append(
                    f'<text x="{x:.1f}" y="{top + plot_h + 16}" text-anchor="middle" fill="#444">{human(value)}</text>'
                )
        out.append(f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#999"/>')
        for kind, item in self._items:
            out.extend(_draw(kind, item, sx, sy, log=self.log_x))
        out.append(
            f'<text x="{left + plot_w / 2:.1f}" y="{top + plot_h + 34}" text-anchor="middle" '
            f'fill="#222">{escape(self.x_label)}</text>'
        )
        out.append(
            f'<text transform="translate(16 {top + plot_h / 2:.1f}) rotate(-90)" text-anchor="middle" '
            f'fill="#222">{escape(self.y_label)}</text>'
        )
        base = top + plot_h + 52
        for i, (label, color, dash) in enumerate(self._legend):
            x, y = left + (i % 2) * (plot_w / 2), base + 18 * (i // 2)
            dashing = ' stroke-dasharray="6 4"' if dash else ""
            out.append(
                f'<line x1="{x:.1f}" x2="{x + 22:.1f}" y1="{y - 4}" y2="{y - 4}" stroke="{color}" '
                f'stroke-width="2.5"{dashing}/>'
            )
            out.append(f'<text x="{x + 28:.1f}" y="{y}" fill="#222">{escape(_clip(label, 38))}</text>')
        for i, text in enumerate(self._notes):
            y = base + 18 * legend_rows + 15 * i
            out.append(f'<text x="{left}" y="{y}" font-size="10.5" fill="#666">{escape(text)}</text>')
        out.append("</svg>")
        return Svg("\n".join(out))

    def _all_y(self) -> list[float]:
        values: list[float] = []
        for _, item in self._items:
            for key in ("ys", "low", "high"):
                values.extend(_floats(item.get(key) or []))
        return values


def _draw(kind: str, item: dict[str, object], sx: object, sy: object, *, log: bool) -> list[str]:
    fx, fy = sx, sy
    assert callable(fx) and callable(fy)

    def ok(x: float, y: float) -> bool:
        return math.isfinite(x) and math.isfinite(y) and not (log and x <= 0)

    color = item["color"]
    if kind == "band":
        pts = [
            (x, lo, hi)
            for x, lo, hi in zip(_floats(item["xs"]), _floats(item["low"]), _floats(item["high"]), strict=True)
            if ok(x, lo) and ok(x, hi)
        ]
        if len(pts) < 2:
            return []
        upper = " ".join(f"{fx(x):.1f},{fy(hi):.1f}" for x, _, hi in pts)
        lower = " ".join(f"{fx(x):.1f},{fy(lo):.1f}" for x, lo, _ in reversed(pts))
        return [f'<polygon points="{upper} {lower}" fill="{color}" fill-opacity="{item["opacity"]}" stroke="none"/>']
    pairs = [(x, y) for x, y in zip(_floats(item["xs"]), _floats(item["ys"]), strict=True) if ok(x, y)]
    if kind == "line":
        if len(pairs) < 2:
            return []
        coords: list[tuple[float, float]] = []
        for i, (x, y) in enumerate(pairs):
            if item["step"] and i:
                coords.append((x, pairs[i - 1][1]))  # a frontier holds its level until the next point
            coords.append((x, y))
        path = " ".join(f"{fx(x):.1f},{fy(y):.1f}" for x, y in coords)
        dash = ' stroke-dasharray="6 4"' if item["dash"] else ""
        return [
            f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="{item["width"]}"'
            f' stroke-linejoin="round"{dash}/>'
        ]
    out = []
    lows, highs = item.get("low"), item.get("high")
    for i, (x, y) in enumerate(pairs):
        if isinstance(lows, Sequence) and isinstance(highs, Sequence):
            lo, hi = float(lows[i]), float(highs[i])
            if math.isfinite(lo) and math.isfinite(hi):
                cx = fx(x)
                out.append(
                    f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{fy(lo):.1f}" y2="{fy(hi):.1f}" '
                    f'stroke="{color}" stroke-width="1.5"/>'
                )
                for v in (lo, hi):
                    out.append(
                        f'<line x1="{cx - 4:.1f}" x2="{cx + 4:.1f}" y1="{fy(v):.1f}" y2="{fy(v):.1f}" '
                        f'stroke="{color}" stroke-width="1.5"/>'
                    )
        fill = "#ffffff" if item["hollow"] else color
        out.append(
            f'<circle cx="{fx(x):.1f}" cy="{fy(y):.1f}" r="4" fill="{fill}" stroke="{color}" stroke-width="1.5"/>'
        )
    return out


def human(value: float) -> str:
    """Axis and table numbers: 512, 1.5k, 250k, 3.2e+11 (FLOP-sized numbers read best in powers of ten)."""
    if not math.isfinite(value):
        return "—"
    magnitude = abs(value)
    if magnitude == 0 or 1e-3 <= magnitude < 1e3:
        return f"{value:.3g}"
    if 1e3 <= magnitude < 1e6:
        return f"{value / 1e3:.3g}k"
    mantissa, exponent = f"{value:.2e}".split("e")
    return f"{float(mantissa):g}e{int(exponent)}"


def _floats(values: object) -> list[float]:
    assert isinstance(values, Iterable)
    return [float(v) if v is not None else math.nan for v in values]


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _x_limits(lo: float, hi: float, *, log: bool) -> tuple[float, float]:
    if log:
        if hi / lo < 4:  # widen a narrow range so a single point is not pressed against the frame
            centre = math.sqrt(lo * hi)
            return centre / 2.5, centre * 2.5
        return lo / 1.35, hi * 1.35
    pad = (hi - lo) * 0.06 or max(abs(lo) * 0.1, 1.0)
    return lo - pad, hi + pad


def _y_limits(values: list[float]) -> tuple[float, float]:
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return 0.0, 1.0
    lo, hi = min(finite), max(finite)
    pad = (hi - lo) * 0.08 or 0.05
    return lo - pad, hi + pad


def _y_ticks(lo: float, hi: float) -> list[float]:
    step = _nice_step((hi - lo) / 5)
    first = math.ceil(lo / step - 1e-9) * step
    return [first + i * step for i in range(int((hi - first) / step + 1e-9) + 1)]


def _x_ticks(lo: float, hi: float, *, log: bool) -> list[tuple[float, bool]]:
    """(value, labelled) pairs: decades labelled; inside a narrow range also 2× and 5×."""
    if not log:
        return [(v, True) for v in _y_ticks(lo, hi)]
    decades = range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
    narrow = math.log10(hi / lo) < 2.2
    ticks = []
    for d in decades:
        for m in range(1, 10):
            value = m * 10.0**d
            if lo <= value <= hi:
                ticks.append((value, m == 1 or (narrow and m in (2, 5))))
    if not any(major for _, major in ticks):  # less than a decade wide: label what is there
        ticks = [(v, True) for v, _ in ticks] or [(math.sqrt(lo * hi), True)]
    return ticks


def _nice_step(raw: float) -> float:
    if raw <= 0 or not math.isfinite(raw):
        return 1.0
    power = 10.0 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
