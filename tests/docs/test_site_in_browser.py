"""The built docs site opened in headless Chromium (issue 62), as the HTML report is (tests/reporting/
test_screenshot.py, whose Chromium fixture this uses): the navigation lists every section, the search box is there
and its index lists the generated pages, and a generated reference page paints its header, navigation and content
(non-blank regions of a real screenshot).

The site is served from 127.0.0.1 by a thread of this process (search fetches its index, which a file:// page may
not); nothing leaves the machine.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import threading
import urllib.parse
import urllib.request
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.docs.conftest import Site
from tests.reporting.test_screenshot import FLAGS, _colours, _painted
from tests.reporting.test_screenshot import chromium as chromium  # the session fixture: installed, or a skip

WIDTH, HEIGHT = 1366, 900  # a laptop's screen
SIZE = (*(f for f in FLAGS if not f.startswith("--window-size")), f"--window-size={WIDTH},{HEIGHT}")
# Appended to a copy of a built page (in the temporary site, never in docs/): once the page has loaded, writes its
# layout into the DOM for --dump-dom.
PROBE = """<script>
const box = (e) => {
  if (!e) return null; const r = e.getBoundingClientRect(); return [r.left, r.top, r.width, r.height];
};
window.addEventListener("load", () => {
  const out = {
    header: box(document.querySelector("header.md-header")),
    nav: box(document.querySelector(".md-sidebar--primary")),
    content: box(document.querySelector("article.md-content__inner")),
    search: box(document.querySelector("input.md-search__input")),
    sections: [...document.querySelectorAll(".md-sidebar--primary .md-nav__item--section > label, " +
                                            ".md-sidebar--primary .md-nav__item--section > a, " +
                                            ".md-sidebar--primary .md-nav__item--section > div")]
      .map((e) => e.innerText.trim()),
    links: [...document.querySelectorAll(".md-sidebar--primary a.md-nav__link")].map((a) => a.getAttribute("href")),
    headings: [...document.querySelectorAll("article h2, article h3")].map((h) => h.innerText.replace("¶", "").trim()),
  };
  const pre = document.createElement("pre"); pre.id = "probe"; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


@pytest.fixture(scope="module")
def served(site: Site) -> Iterator[str]:
    handler = functools.partial(_Quiet, directory=str(site.path))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # the test's output is its assertions
        pass


def _run(binary: str, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([binary, *SIZE, f"--user-data-dir={profile}", *args], capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def test_a_generated_reference_page_renders_with_navigation_and_search(chromium: str, site: Site, served: str,
                                                                       tmp_path: Path) -> None:
    from PIL import Image

    from ttscale.kit.params import describe_params, params_class
    from ttscale.strategies import STRATEGIES

    page = site.path / "reference" / "strategies" / "beam"
    (page / "probe.html").write_text((page / "index.html").read_text(encoding="utf-8").replace(
        "</body>", PROBE + "</body>"), encoding="utf-8")
    dom = _run(chromium, tmp_path / "profile-dom", "--virtual-time-budget=5000", "--dump-dom",
               f"{served}/reference/strategies/beam/probe.html").stdout
    assert '<pre id="probe">' in dom, "the page's scripts did not run to the probe"
    layout: dict[str, Any] = json.loads(dom.split('<pre id="probe">', 1)[1].split("</pre>", 1)[0]
                                        .replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">"))

    # The navigation: every top section of mkdocs.yml, and the generated Reference section with this page in it.
    for section in ("Concepts", "How-to guides", "Reference", "Results"):
        assert section in layout["sections"], (section, layout["sections"])
    page_url = f"{served}/reference/strategies/beam/"
    targets = {urllib.parse.urljoin(page_url, link) for link in layout["links"] if link}
    for target in ("reference/strategies/beam/", "reference/cli/", "reference/verifiers/", "getting-started/"):
        assert f"{served}/{target}" in targets, (target, sorted(targets)[:20])
    # The page: one heading per parameter, read from the strategy's own dataclass.
    names = [p.name for p in describe_params(params_class(STRATEGIES.get("beam")))]
    assert "Parameters" in layout["headings"] and set(names) <= set(layout["headings"])
    # The search: its box is on screen, and the index it fetches from the served site lists this page. (Typing a
    # query in headless Chromium does not wait for the search worker: the worker's answer is not checked here.)
    assert layout["search"] and layout["search"][2] > 50, layout["search"]
    with urllib.request.urlopen(f"{served}/search/search_index.json", timeout=30) as answer:
        index = json.load(answer)
    assert any(doc["location"].startswith("reference/strategies/beam/") for doc in index["docs"])

    shot = tmp_path / "beam.png"
    _run(chromium, tmp_path / "profile-shot", "--virtual-time-budget=3000", f"--screenshot={shot}",
         f"{served}/reference/strategies/beam/")
    if os.environ.get("TTSCALE_SCREENSHOT_DIR"):  # keep it for a human to look at
        shutil.copy(shot, Path(os.environ["TTSCALE_SCREENSHOT_DIR"]) / "docs-beam.png")
    image = Image.open(shot).convert("RGB")
    assert image.size == (WIDTH, HEIGHT)
    for region, least in (("header", 0.05), ("nav", 0.02), ("content", 0.05)):
        box = layout[region]
        assert box and box[2] > 100 and box[3] > 40, (region, box)
        visible = [box[0], box[1], box[2], min(box[3], HEIGHT - box[1])]
        assert _painted(image, visible) > least, f"the {region} paints nothing"
    assert _colours(image, [0, 0, WIDTH, HEIGHT]) > 20  # text, code and links, not a blank frame
