"""Headless Chromium for the page tests: what a page looks like at a screen size (measured by a
probe script that only the test's copy of the page carries) and a screenshot of it, kept with
the test's files so a reader can look."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from html import unescape
from pathlib import Path
from typing import Any

import pytest

SCREENS = [(1366, 768), (1920, 1080)]  # a common laptop and a common desktop screen


def chromium() -> str | None:
    return next(filter(None, map(shutil.which, ("chromium", "chromium-browser"))), None)


needs_chromium = pytest.mark.skipif(
    chromium() is None, reason="no chromium binary on PATH (apt-get install chromium)"
)


def _run(arguments: list[str], profile: Path, screen: tuple[int, int]) -> str:
    browser = chromium()
    assert browser is not None
    command = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
    command += [f"--user-data-dir={profile}", f"--window-size={screen[0]},{screen[1]}"]
    command += ["--hide-scrollbars", "--virtual-time-budget=10000", *arguments]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{browser} did not finish {arguments[-1]} within 120 s.")
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def screenshot(page: Path, screen: tuple[int, int], png: Path, fragment: str = "") -> Path:
    """``png``: the first screen of ``page`` (``#fragment`` appended to its URL) at ``screen``."""
    url = page.as_uri() + (f"#{fragment}" if fragment else "")
    _run([f"--screenshot={png}", url], png.parent / "chromium-profile", screen)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    print(f"screenshot: {png}")
    return png


# Runs after the page's own script: measures the first screen, then performs ``ACTIONS`` (a
# JavaScript async function body given the helpers below), and leaves everything it found as
# JSON in <body data-probe>, which --dump-dom then shows.
PROBE = """<script>
window.addEventListener("load", async () => {
  const box = (element) => {
    if (!element) return null;
    const r = element.getBoundingClientRect();
    return {top: r.top, bottom: r.bottom, left: r.left, right: r.right, width: r.width};
  };
  const onScreen = (element) => {
    const r = box(element);
    return !!r && r.width > 0 && r.top >= 0 && r.bottom <= innerHeight && r.left >= 0
      && r.right <= innerWidth;
  };
  const loaded = (href) => new Promise((done) => {
    const image = new Image();
    image.onload = () => done(image.naturalWidth);
    image.onerror = () => done(0);
    image.src = href;
  });
  const found = {innerWidth, innerHeight, scrollWidth: document.scrollingElement.scrollWidth};
  try {
    await (async () => { ACTIONS })();
  } catch (error) {
    found.error = String(error);
  }
  document.body.dataset.probe = JSON.stringify(found);
});
</script>
</body>"""


def probe(page: Path, screen: tuple[int, int], actions: str) -> dict[str, Any]:
    """What ``actions`` found on ``page`` at ``screen`` (a probing copy sits beside the page, so
    its relative paths resolve)."""
    probing = page.with_name(f"probe-{screen[0]}.html")
    probing.write_text(
        page.read_text("utf-8").replace("</body>", PROBE.replace("ACTIONS", actions))
    )
    dom = _run(["--dump-dom", probing.as_uri()], page.parent / "chromium-profile", screen)
    probing.unlink()
    found = re.search(r'<body[^>]* data-probe="([^"]*)"', dom)
    assert found, "the probe did not run: " + dom[-500:]
    result: dict[str, Any] = json.loads(unescape(found[1]))
    assert "error" not in result, result["error"]
    return result
