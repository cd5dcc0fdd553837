"""The HTML report opened in headless Chromium: the leaderboard's rows are in the DOM, and the table,
the warning and every chart paint something (non-blank regions of a real screenshot) at laptop width.

Chromium is Debian's `chromium` package, installed by `make test`'s set-up; run as root without it,
this test installs it with apt-get, and skips (saying why) only when that is impossible.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ttscale.cli import main

WIDTH, HEIGHT = 1366, 3200  # a laptop's width; tall enough that the whole report is one screenshot
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--force-device-scale-factor=1",
    f"--window-size={WIDTH},{HEIGHT}",
)
# Appended to a copy of the report (never to the report itself): writes the layout into the DOM for --dump-dom.
PROBE = """<script>
const box = (e) => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; };
const table = document.querySelector("table.leaderboard");
const out = {
  table: box(table), overflow: table.parentElement.scrollWidth - table.parentElement.clientWidth,
  rows: [...table.querySelectorAll("tbody tr")].map((tr) => tr.cells[2].innerText.split("\\n")[0]),
  plots: [...document.querySelectorAll("svg.plot")].map(box),
  warning: document.getElementById("warnings") ? box(document.getElementById("warnings")) : null,
};
const pre = document.createElement("pre"); pre.id = "probe"; pre.textContent = JSON.stringify(out);
document.body.appendChild(pre);
</script>"""


@pytest.fixture(scope="session")
def chromium() -> str:
    found = _which()
    if found:
        return found
    reason = "chromium is not installed and this is not root with apt-get (make test installs it)"
    if os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        for command in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "chromium"]):
            try:
                done = subprocess.run(command, capture_output=True, text=True, timeout=900, env=env)
            except subprocess.TimeoutExpired:
                reason = f"{' '.join(command)} timed out"
                break
            if done.returncode:
                reason = f"{' '.join(command)} failed: {' '.join(done.stderr.split())[-300:]}"
                break
        found = _which()
    if not found:
        pytest.skip(f"cannot install chromium: {reason}")
    return found


def _which() -> str | None:
    return next((p for p in map(shutil.which, ("chromium", "chromium-browser")) if p), None)


def _chromium(binary: str, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [binary, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def test_the_report_renders_table_warning_and_charts_in_chromium(chromium: str, sweep: Path, tmp_path: Path) -> None:
    from PIL import Image

    report = tmp_path / "report.html"
    assert main(["report", str(sweep), "--out", str(report), "--title", "Screenshot test"]) == 0
    probe = tmp_path / "probe.html"
    probe.write_text(report.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8")
    dom = _chromium(chromium, tmp_path / "profile-dom", "--dump-dom", probe.as_uri()).stdout
    layout: dict[str, Any] = json.loads(dom.split('<pre id="probe">', 1)[1].split("</pre>", 1)[0].replace("&amp;", "&"))

    shot = tmp_path / "report.png"
    _chromium(chromium, tmp_path / "profile-shot", f"--screenshot={shot}", report.as_uri())
    if os.environ.get("TTSCALE_SCREENSHOT_DIR"):  # keep it for a human to look at
        shutil.copy(shot, Path(os.environ["TTSCALE_SCREENSHOT_DIR"]) / "report.png")
    image = Image.open(shot).convert("RGB")
    assert image.size == (WIDTH, HEIGHT)

    # Table rows are in the DOM, one per run, and the table fits a laptop's width without scrolling.
    assert sorted(layout["rows"]) == sorted(p.name for p in sweep.iterdir())
    assert layout["overflow"] <= 0, f"the leaderboard is {layout['overflow']} px too wide for {WIDTH} px"
    assert _painted(image, layout["table"]) > 0.05
    assert len(layout["plots"]) == 3
    for plot in layout["plots"]:
        assert plot[2] > 400 and plot[3] > 250, plot  # laid out at a readable size
        assert _painted(image, plot) > 0.03
        assert _colours(image, plot) > 20  # lines, bands and text, not an empty frame
    # The budget-mismatch warning is on screen, in its warning colour, above the table.
    assert layout["warning"] is not None and layout["warning"][1] < layout["table"][1]
    left, top, width, height = (int(v) for v in layout["warning"])
    assert height > 30 and image.getpixel((left + width // 2, top + 3)) == (0xFF, 0xF4, 0xD6)


def _crop(image: Any, box: list[float]) -> Any:
    left, top, width, height = box
    return image.crop((int(left), int(top), int(left + width), int(top + height)))


def _painted(image: Any, box: list[float]) -> float:
    """Share of the region's pixels that are not the region's most common (background) colour."""
    region = _crop(image, box)
    counts = region.getcolors(maxcolors=1 << 20)
    background = max(counts)[0]
    return 1.0 - background / (region.size[0] * region.size[1])


def _colours(image: Any, box: list[float]) -> int:
    return len(_crop(image, box).getcolors(maxcolors=1 << 20))
