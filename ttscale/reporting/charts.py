"""The report's charts through matplotlib: a styled figure to draw on, and that figure as inline SVG.

    >>> fig, ax = new_chart(title="Accuracy vs tokens", x_label="tokens per problem (log scale)")
    >>> ax.plot([256, 1024, 4096], [0.4, 0.55, 0.6], color=PALETTE[0], marker="o", label="self_consistency")
    >>> to_svg(fig, note="Bands: 95% Wilson intervals.")   # an `Svg`: Jupyter shows it, HTML embeds it

matplotlib is imported inside the functions (`import ttscale.reporting` stays light), and only its
object-oriented API is used: no pyplot state, no GUI backend, so charts can be drawn from any thread.
The SVG keeps text as text (searchable, selectable, read by the tests), is byte-for-byte the same for
the same figure, and references nothing outside itself.
"""

from __future__ import annotations

import math
import re
import textwrap
import threading
from collections.abc import Sequence
from html import escape
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.typing import RcKeyType

    LegendEntry = tuple[Artist, str]
    """A legend's handle (what it shows) and its label."""

#: Okabe–Ito: distinguishable with the common colour-vision deficiencies.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#7F7F7F", "#000000")
INK = "#222222"
"""Titles, labels and the series that belong to no strategy (the Pareto frontier, its fit)."""
FONTS = ["DejaVu Sans", "Segoe UI", "Helvetica", "Arial"]
"""The SVG names these, then `sans-serif`; matplotlib lays text out with the first (its bundled font)."""
WIDTH, HEIGHT = 4.6, 2.5
"""The plotting area in inches: the SVG adds the title, the tick labels and axis labels, the legend and the note."""
LEGEND_CHARS = 38
"""A legend label is clipped to this many characters, so that two columns fit the chart's width."""
NOTE_CHARS = 80
"""The small print under a chart is wrapped at this many characters."""

_STYLE: dict[RcKeyType, Any] = {
    "font.family": "sans-serif",
    "font.sans-serif": FONTS,
    "font.size": 9.5,
    "axes.edgecolor": "#999999",
    "axes.labelcolor": INK,
    "xtick.color": "#444444",
    "ytick.color": "#444444",
    "text.color": INK,
    "text.parse_math": False,  # a '$' in a run or model name is a character, not mathtext
    "svg.fonttype": "none",  # text stays <text>: searchable in the report, readable by the tests
}

_RC = threading.Lock()
"""Held while `_STYLE` is in force: svg.fonttype and svg.hashsalt are only rcParams, which are process-global
(matplotlib's rc_context restores them on exit, so two threads in one at once would undo each other's)."""


class Svg(str):
    """SVG markup that Jupyter displays as a picture."""

    def _repr_svg_(self) -> str:
        return str(self)


def new_chart(
    *,
    title: str,
    x_label: str,
    y_label: str = "accuracy",
    log_x: bool = True,
    y_range: tuple[float, float] | None = (0.0, 1.0),
    y_percent: bool = True,
) -> tuple[Figure, Axes]:
    """A figure with one styled Axes: title, labels, a grid, x in powers of ten (`log_x`), y as percentages.

    `y_range` fixes the y limits (accuracy's 0–100%, a little slack so a point at 100% is not cut in half);
    None fits the data. Non-positive x on a log axis is masked (not drawn), never clipped to the frame.
    """
    import matplotlib
    from matplotlib.figure import Figure
    from matplotlib.rcsetup import cycler  # matplotlib's own validated cycler: nothing more to declare
    from matplotlib.ticker import FuncFormatter, PercentFormatter

    style: dict[RcKeyType, Any] = {**_STYLE, "axes.prop_cycle": cycler(color=PALETTE)}
    with _RC, matplotlib.rc_context(style):  # properties are read when artists are made: style them here
        fig = Figure(figsize=(WIDTH, HEIGHT))
        ax = fig.add_axes((0, 0, 1, 1))  # the figure is the plot; the saved area grows to the text around it
        ax.set_title(title, loc="left", fontsize=11.5, fontweight="bold", color=INK)
        ax.set_xlabel(x_label)
        ax.set_ylabel(y_label)
    if log_x:
        ax.set_xscale("log", nonpositive="mask")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: human(value)))
        ax.xaxis.set_minor_formatter(FuncFormatter(lambda value, _: _minor_label(ax, value)))
    if y_range is not None:
        slack = (y_range[1] - y_range[0]) * 0.03
        ax.set_ylim(y_range[0] - slack, y_range[1] + slack)
    if y_percent:
        ax.yaxis.set_major_formatter(PercentFormatter(xmax=1, decimals=0))
    ax.grid(True, which="major", color="#e6e6e6", linewidth=0.8)
    ax.grid(True, which="minor", axis="x", color="#f3f3f3", linewidth=0.6)
    ax.set_axisbelow(True)
    ax.tick_params(which="both", length=0)
    return fig, ax


def legend_entry(label: str, *, color: str, dashed: bool = False) -> LegendEntry:
    """A legend handle with no drawing of its own (one entry for several fitted curves, a colour per series)."""
    from matplotlib.lines import Line2D

    return Line2D([], [], color=color, linewidth=2.2, linestyle="--" if dashed else "-"), label


def to_svg(fig: Figure, *, legend: Sequence[LegendEntry] | None = None, note: str = "") -> Svg:
    """The figure as one inline `<svg class="plot">`: legend (two columns) and small print `note` under the plot.

    `legend` lists (handle, label) pairs (see `legend_entry`); None collects the labelled artists.
    Raises ValueError when nothing was drawn.
    """
    import io

    import matplotlib
    from matplotlib.text import Text
    from matplotlib.transforms import ScaledTranslation

    if not any(ax.has_data() for ax in fig.axes):
        raise ValueError("a chart needs at least one point")
    ax = fig.axes[0]
    title = ax.get_title(loc="left") or ax.get_title()
    for each in fig.axes:
        _widen_log_x(each)
    handles, labels = _legend(fig, legend)
    # The ids of clip paths and marker shapes hash their geometry with this salt: fixed, so the same chart is the same
    # bytes, and the title's, so that charts inlined in one HTML page do not share ids.
    with _RC, matplotlib.rc_context({**_STYLE, "svg.hashsalt": f"ttscale {title}"}):
        below: Artist = ax.xaxis.label
        if handles:
            # Two columns just under the x label. Anchored to the plot in points, not to the figure's edge: the saved
            # area is cropped to what was drawn (`bbox_inches="tight"`), and a figure-anchored legend would move.
            fig.draw_without_rendering()  # places the tick labels and the x label, to measure how far down they go
            drop = (ax.bbox.y0 - ax.xaxis.label.get_window_extent().y0) / fig.dpi + 0.06
            below = ax.legend(
                handles,
                [_clip(label, LEGEND_CHARS) for label in labels],
                loc="upper left",
                ncols=2,
                bbox_to_anchor=(0, 0),
                bbox_transform=ax.transAxes + ScaledTranslation(0, -drop, fig.dpi_scale_trans),
                borderaxespad=0,
                borderpad=0,
                frameon=False,
                handlelength=2.2,
                columnspacing=1.5,
            )
        if note:  # small print under the legend (or the x label), left-aligned with the plot
            ax.annotate(
                textwrap.fill(note, NOTE_CHARS),
                xy=(0, 0),
                xycoords=(ax.transAxes, below),
                xytext=(0, -6),
                textcoords="offset points",
                va="top",
                ha="left",
                fontsize=8,
                color="#666666",
                annotation_clip=False,
                clip_on=False,  # clipped to the plot, it would count for nothing in the crop
            )
        for text in fig.findobj(Text):
            text.set_parse_math(False)  # also the labels that a caller set outside our style
        buffer = io.StringIO()
        fig.savefig(
            buffer,
            format="svg",
            bbox_inches="tight",
            pad_inches=0.08,
            facecolor="white",
            metadata={"Date": None, "Creator": None, "Format": None, "Type": None},  # no RDF block, no timestamp
        )
    return Svg(_inline(buffer.getvalue(), title=title))


def human(value: float) -> str:
    """Axis and table numbers: 512, 1.5k, 250k, 3.2e11 (FLOP-sized numbers read best in powers of ten)."""
    if not math.isfinite(value):
        return "—"
    magnitude = abs(value)
    if magnitude == 0 or 1e-3 <= magnitude < 1e3:
        return f"{value:.3g}"
    if 1e3 <= magnitude < 1e6:
        return f"{value / 1e3:.3g}k"
    mantissa, exponent = f"{value:.2e}".split("e")
    return f"{float(mantissa):g}e{int(exponent)}"


def _minor_label(ax: Axes, value: float) -> str:
    """Label 2× and 5× a power of ten when the axis spans under ~2 decades: otherwise it may show one label."""
    low, high = ax.get_xlim()
    if value <= 0 or low <= 0 or math.log10(high / low) >= 2.2:
        return ""
    mantissa = value / 10 ** math.floor(math.log10(value) + 1e-9)
    return human(value) if round(mantissa) in (2, 5) and math.isclose(mantissa, round(mantissa)) else ""


def _legend(fig: Figure, legend: Sequence[LegendEntry] | None) -> tuple[list[Artist], list[str]]:
    if legend is not None:
        pairs = list(legend)
    else:
        pairs = [pair for ax in fig.axes for pair in zip(*ax.get_legend_handles_labels(), strict=True)]
    seen: dict[str, Artist] = {}
    for handle, label in pairs:
        seen.setdefault(label, handle)  # one entry per label, the first drawn
    return list(seen.values()), list(seen)


def _widen_log_x(ax: Axes) -> None:
    """Under a factor 4 of range, a log axis is widened around its centre, so a single budget is not pressed against
    the frame (autoscaling gives one point with error bars a range of a few ulps)."""
    if ax.get_xscale() != "log":
        return
    low, high = ax.get_xlim()
    if low > 0 and high / low < 4:
        centre = math.sqrt(low * high)
        ax.set_xlim(centre / 2.5, centre * 2.5)


def _inline(svg: str, *, title: str) -> str:
    """matplotlib's document → an element for HTML: no XML prolog or DOCTYPE, the `plot` class, an image role, and
    a <title> (its accessible name)."""
    start = svg.index("<svg")
    opening = svg.index(">", start) + 1
    head = re.sub(r"^<svg ", '<svg class="plot" role="img" ', svg[start:opening], count=1)
    return f"{head}\n <title>{escape(title)}</title>{svg[opening:]}".strip()


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
