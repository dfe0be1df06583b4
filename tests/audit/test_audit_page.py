"""The audit's report.html: hostile film ids and referral field names are text (a dataset anyone
published decides them, so none may open a tag, close an attribute or run a script); and in
headless Chromium at two screen widths, the verdict and a film are on the first screen, nothing
scrolls sideways, each pair is shown once and a click enlarges it."""

from __future__ import annotations

import io
import re
from html import unescape
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from tests.audit.audit_runs import FAST, copy_dataset, jpeg, rewrite, run, shard, write_generic
from tests.browser import SCREENS, needs_chromium, probe, screenshot

HOSTILE_ID = "<script>document.title='owned'</script>\"><b>bold</b>|\n[a](javascript:x)&amp;"
HOSTILE_FIELD = '<i onmouseover="x">age</i>'
PAGE_TAGS = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "p", "ul", "li"}
PAGE_TAGS |= {"table", "tr", "th", "td", "img", "section", "div", "figure", "figcaption", "a"}
PAGE_TAGS |= {"template", "dialog", "form", "button", "script", "svg", "image", "rect", "line"}


class Page(HTMLParser):
    """Tags, image alts and text, as a browser would read them."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.alts: list[str] = []
        self.text: list[str] = []
        self.scripts = 0
        self._code = False  # inside <script> or <style>: no text a reader sees
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.scripts += tag == "script"
        self._code = tag in ("script", "style")
        if tag == "img":
            self.alts.append(dict(attrs)["alt"] or "")

    def handle_endtag(self, tag: str) -> None:
        self._code = False

    def handle_data(self, data: str) -> None:
        if not self._code:
            self.text.append(data)


def hostile_dataset(folder: Path) -> Path:
    """Twelve films per split, the last train film copied into test under a hostile id, and a
    referral field with a hostile name that follows the label (so a finding names it)."""
    rng = np.random.default_rng(3)
    images = [jpeg(rng.integers(0, 256, (48, 96), dtype=np.uint8)) for _ in range(24)]
    folder.mkdir(parents=True)
    for split, rows in (("train", range(12)), ("test", range(11, 24))):
        ids = [HOSTILE_ID if (split, n) == ("test", 11) else f"{split}-{n}" for n in rows]
        labels = [n % 4 for n in rows]
        table = pa.table(
            {
                "image": pa.array([images[n] for n in rows], pa.binary()),
                "film_id": ids,
                "label": labels,
                "referral": [{HOSTILE_FIELD: 10 * label} for label in labels],
            }
        )
        pq.write_table(table, folder / f"{split}-00000-of-00001.parquet")
    return folder


def test_hostile_ids_and_field_names_are_text_on_the_audit_page(tmp_path: Path):
    data = hostile_dataset(tmp_path / "data")
    result = run(data, "--out", tmp_path / "out", "--label-column", "label", *FAST)
    assert result.exit_code == 1, result.output
    page = Page((tmp_path / "out" / "report.html").read_text(encoding="utf-8"))
    assert page.tags <= PAGE_TAGS, page.tags - PAGE_TAGS
    assert page.scripts == 1  # the page's own
    assert f"test / {HOSTILE_ID}" in page.alts  # the quote closed no attribute
    text = "".join(page.text)
    assert f"test / {HOSTILE_ID}" in text
    assert f"Referral field {HOSTILE_FIELD} is associated with label" in text
    assert HOSTILE_FIELD in page.text  # its own table cell


def leaky_copy(sample_dataset_dir: Path, folder: Path) -> Path:
    """The sample build's dataset (whose visits of one patient cross splits) with its first
    test film copied into train a little brighter: a leak by hash and by features."""
    build = copy_dataset(sample_dataset_dir, folder)
    row = pq.read_table(shard(build, "test")).to_pylist()[0]
    pixels = np.asarray(Image.open(io.BytesIO(row["image"]["bytes"])), dtype=np.int16)
    copied = {
        **row,
        "film_id": "990001",
        "image": {"bytes": jpeg(np.clip(pixels + 3, 0, 255).astype(np.uint8)), "path": "x.jpg"},
        "cluster_id": "990001",
    }
    rewrite(shard(build, "train"), [*pq.read_table(shard(build, "train")).to_pylist(), copied])
    return build


@pytest.fixture(scope="module")
def leaky_report(sample_dataset_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("leaky-audit")
    result = run(leaky_copy(sample_dataset_dir, folder), "--out", folder / "out", *FAST)
    assert result.exit_code == 1, result.output
    return folder / "out" / "report.html"


@pytest.fixture(scope="module")
def clean_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("clean-audit")
    result = run(write_generic(folder / "data"), "--out", folder / "out", *FAST)
    assert result.exit_code == 0, result.output
    return folder / "out" / "report.html"


# The first screen, each pair's films and a click on the first pair, as a reader meets them.
READER = """
  const verdict = document.getElementById("verdict");
  found.verdict = onScreen(verdict);
  found.status = verdict.className;
  found.title = verdict.querySelector("h2").textContent;
  found.colour = getComputedStyle(verdict).backgroundColor;
  const film = document.querySelector(".card img");
  found.film = onScreen(film) && film.naturalWidth > 0;
  found.pairs = [...document.querySelectorAll(".card")].map(
    (card) => [...card.querySelectorAll("img")].map((image) => image.alt).join(" | "));
  const viewer = document.getElementById("viewer");
  const enlarge = async (image) => {
    image.click();
    const shown = [];
    for (const film of viewer.querySelectorAll("img, image")) {
      const src = film.getAttribute("src") || film.getAttribute("href");
      shown.push([src.slice(0, 30), await loaded(src)]);
    }
    const enlarged = {open: viewer.open, shown, onScreen: onScreen(viewer.querySelector("figure")),
      boxes: viewer.querySelectorAll("rect.lesion").length,
      scrollWidth: document.scrollingElement.scrollWidth};
    viewer.close();
    return enlarged;
  };
  found.first = await enlarge(film);
  const pair = document.querySelector("#closest + .cards img");
  if (pair) found.pair = await enlarge(pair);
"""


@needs_chromium
@pytest.mark.parametrize("screen", SCREENS, ids=lambda s: f"{s[0]}px")
def test_a_leak_is_said_first_in_red_each_pair_once_and_a_click_shows_the_matched_features(
    leaky_report: Path, screen, tmp_path
):
    screenshot(leaky_report, screen, tmp_path / f"audit-leak-{screen[0]}.png")
    screenshot(leaky_report, screen, tmp_path / f"audit-leak-{screen[0]}-view.png", "view-1")
    found = probe(leaky_report, screen, READER)
    assert found["innerWidth"] == screen[0]
    assert found["scrollWidth"] <= found["innerWidth"], found  # no sideways scroll
    assert found["verdict"] and found["film"], found  # both on the first screen
    assert found["status"] == "verdict leak" and found["title"].startswith("LEAK: ")
    assert found["colour"] == "rgb(253, 226, 225)"
    assert len(found["pairs"]) == len(set(found["pairs"])), found["pairs"]  # each pair once
    assert "train / 990001 | test / " in "\n".join(found["pairs"])
    # The first card is a pair verified by features: the click shows their matched features.
    first = found["first"]
    assert first["open"] and first["onScreen"], first
    assert first["scrollWidth"] <= found["innerWidth"], first
    [(src, width)] = first["shown"]
    assert src == "visits/visit-001.png" and width > 500, first
    # A pair found by hash opens both films at full size with their lesion boxes.
    pair = found["pair"]
    assert pair["open"] and pair["onScreen"] and pair["boxes"] > 0, pair
    assert all(src.startswith("films/film-") and width > 1000 for src, width in pair["shown"])


@needs_chromium
@pytest.mark.parametrize("screen", SCREENS, ids=lambda s: f"{s[0]}px")
def test_a_clean_dataset_gets_a_green_verdict_first(clean_report: Path, screen, tmp_path):
    screenshot(clean_report, screen, tmp_path / f"audit-clean-{screen[0]}.png")
    found = probe(clean_report, screen, READER)
    assert found["scrollWidth"] <= found["innerWidth"] == screen[0], found
    assert found["verdict"] and found["film"], found
    assert found["status"] == "verdict clean" and found["title"] == "Clean"
    assert found["colour"] == "rgb(227, 246, 229)"
    # The pair, enlarged: both films at full size, from files beside the page; no lesion list.
    first = found["first"]
    assert first["open"] and len(first["shown"]) == 2 and first["boxes"] == 0, first
    assert all(src.startswith("films/film-") and width == 96 for src, width in first["shown"])


def test_the_verdict_names_the_counts_per_split_and_every_finding_once(leaky_report: Path):
    page = leaky_report.read_text("utf-8")
    verdict = Page(page[page.index('<section class="verdict') : page.index("</section>")])
    text = "".join(verdict.text)
    findings = re.findall(r"<li>(.*?)</li>", page)
    assert findings and len(findings) == len(set(findings))
    assert all(unescape(finding) in text for finding in findings)  # in the verdict, once
    for split in ("train", "validation", "test"):
        assert re.search(rf"{split}\d+\d+", text), text
