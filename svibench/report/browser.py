"""A report as a reader sees it: headless Chromium opens a page at a window width, measures its first screen and
takes a screenshot.  Used by the browser test (``tests/integration/test_browser.py``) and by ``svibench regenerate``
(a screenshot of each report from its top through its headline figure, beside it); both do without it where no Chromium is installed.

Also whether a page's images show with no network (:func:`images_shown`: the offline performance history,
``tools/asv_offline.py``).  A report is measured by a script appended to a copy of it: the width the page needs against the window's (a page
wider than the window scrolls sideways), the height on screen of the headline figure's smallest text (its
``data-font-px`` at the PNG's own size times the scale the page shows it at), and where the ranking, the claims
and the headline figure begin.  No library drives Chromium without a browser download or a server; its command
line does all this.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

__all__ = ["chromium", "measure", "images_shown", "screenshot", "headline_screenshot", "FIRST_SCREEN", "SCREENSHOT"]

#: The window of the first screen: a 1280 px wide laptop browser.
FIRST_SCREEN = (1280, 900)
#: The screenshot ``svibench regenerate`` writes beside each report (:func:`headline_screenshot`).
SCREENSHOT = "headline-1280px.png"

#: Reads the page once loaded, into the ``data-measure`` attribute of ``<body>`` (JSON).
_SCRIPT = """<script>
window.addEventListener("load", () => {
  const top = (el) => el ? el.getBoundingClientRect().top + window.scrollY : null;
  const heading = (start) => [...document.querySelectorAll(".glance h3")].find(h => h.textContent.startsWith(start));
  const img = document.querySelector(".glance figure img");
  const shown = img ? img.getBoundingClientRect().width : 0;
  document.body.setAttribute("data-measure", JSON.stringify({
    window: window.innerWidth, page: document.documentElement.scrollWidth,
    font: img && img.dataset.fontPx ? parseFloat(img.dataset.fontPx) * shown / img.naturalWidth : null,
    figure_shown: shown, figure_natural: img ? img.naturalWidth : 0,
    figure_height: img ? img.getBoundingClientRect().height : 0,
    ranking: top(heading("Ranking")), claims: top(heading("Claims") || heading("Project targets")), headline: top(img),
  }));
});
</script>"""


def chromium() -> str | None:
    """The Chromium executable on the PATH (Debian's ``chromium``), or None."""
    return next((found for name in ("chromium", "chromium-browser", "google-chrome") if (found := shutil.which(name))),
                None)


def _run(args: list[str]) -> str:
    exe = chromium()
    if exe is None:
        raise FileNotFoundError("no Chromium on the PATH (Debian: apt-get install chromium)")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
             "--host-resolver-rules=MAP * ~NOTFOUND", "--virtual-time-budget=10000"]
    done = subprocess.run([exe, *flags, *args], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"chromium exited {done.returncode}: {done.stderr.strip()[-500:]}")
    return done.stdout


def _measured(page: Path, script: str, width: int, height: int) -> dict:
    """Run ``page`` with ``script`` appended (it sets ``data-measure`` on ``<body>``), offline; its JSON."""
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / "page.html"
        copy.write_text(Path(page).read_text(encoding="utf-8").replace("</body>", script + "</body>"),
                        encoding="utf-8")
        dom = _run([f"--window-size={width},{height}", "--dump-dom", copy.as_uri()])
    found = re.search(r'data-measure="([^"]*)"', dom)
    if found is None:
        raise RuntimeError(f"{page}: the page's measuring script did not run")
    return json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))


def measure(page: Path, width: int = FIRST_SCREEN[0], height: int = FIRST_SCREEN[1]) -> dict:
    """What a reader of ``page`` (an ``index.html`` report) sees in a window of ``width`` × ``height`` px (module
    docstring); positions are px from the top of the page, None where the page lacks the element."""
    return _measured(page, _SCRIPT, width, height)


def images_shown(page: Path) -> tuple[int, int]:
    """How many images ``page`` has, and how many of them loaded and show (natural width > 0), with no network."""
    script = ('<script>window.addEventListener("load", () => { const all = [...document.images]; '
              'document.body.setAttribute("data-measure", JSON.stringify([all.length, '
              'all.filter(i => i.complete && i.naturalWidth > 0).length])); });</script>')
    total, shown = _measured(page, script, *FIRST_SCREEN)
    return total, shown


def screenshot(page: Path, out: Path, width: int = FIRST_SCREEN[0], height: int = FIRST_SCREEN[1]) -> Path:
    """A PNG of ``page``'s first screen in a window of ``width`` × ``height`` px, written to ``out``."""
    out = Path(out).resolve()
    _run([f"--window-size={width},{height}", f"--screenshot={out}", Path(page).resolve().as_uri()])
    return out


def headline_screenshot(page: Path, out: Path) -> Path:
    """A screenshot of ``page`` at 1280 px wide from its top through the headline figure (the ranking, the claims
    and the headline as a reader scrolls to them), written to ``out``; the first screen alone where it has no
    headline."""
    seen = measure(page)
    height = FIRST_SCREEN[1]
    if seen["headline"] is not None:
        height = max(height, int(seen["headline"] + seen["figure_height"] + 24))
    return screenshot(page, out, FIRST_SCREEN[0], min(height, 6000))
