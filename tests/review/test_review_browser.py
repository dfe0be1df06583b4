"""The review page in a real headless Chromium loading it from file://: groups in order,
every thumbnail loaded, and at two widths a film on the first screen that opens with its
boxes, filters that hide rows, and the sample build's page fitting the screen."""

from __future__ import annotations

import re
import shutil
import subprocess
from html import unescape
from pathlib import Path

import pytest
from PIL import Image

from curation.core.records import Lesion
from curation.hashes.thumbnails import THUMB_BOX
from curation.review.closeness import RejectedFile, ReviewCluster, ReviewGroup, RuleCounts
from curation.review.review import write_review_page
from tests.browser import SCREENS, needs_chromium, probe, screenshot
from tests.review.review_records import HOSTILE, Page, review_link, review_member


def _chromium() -> str | None:
    return next(filter(None, map(shutil.which, ("chromium", "chromium-browser"))), None)


def _dump_dom(browser: str, page: Path, profile: Path) -> str:
    """The DOM as Chromium has it after loading ``page`` (images included) from file://."""
    command = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        f"--user-data-dir={profile}",
        "--virtual-time-budget=10000",
        "--dump-dom",
        page.as_uri(),
    ]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=90, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{browser} did not finish loading {page} within 90 s.")
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


# Only the test's copy of the page carries this script: it records, once every image has
# loaded or failed, each image's decoded width, which --dump-dom then shows as an attribute.
# It also records where each dropped film's facts table starts within its block, so a
# portrait thumbnail that pushed its table aside would show.
PROBE = """<script>
window.addEventListener("load", () => {
  for (const image of document.images) image.dataset.naturalWidth = image.naturalWidth;
  for (const block of document.querySelectorAll(".member")) {
    const table = block.querySelector("table").getBoundingClientRect();
    block.dataset.tableLeft = Math.round(table.left - block.getBoundingClientRect().left);
    block.dataset.tableTop = Math.round(table.top - block.getBoundingClientRect().top);
  }
  document.body.dataset.probe = "ran";
});
</script>
</body>"""


def _screenshot(browser: str, page: Path, profile: Path, png: Path) -> None:
    """A picture of the page as Chromium draws it, kept with the test's files for a reader."""
    command = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
    command += [f"--user-data-dir={profile}", "--window-size=1200,1800", f"--screenshot={png}"]
    done = subprocess.run([*command, page.as_uri()], capture_output=True, timeout=90, check=False)
    assert done.returncode == 0 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", done.stderr


@pytest.mark.skipif(
    _chromium() is None, reason="no chromium binary on PATH (apt-get install chromium)"
)
def test_a_real_headless_browser_renders_the_groups_in_order_and_loads_every_thumbnail(
    tmp_path, films
):
    groups = [
        ReviewGroup("f1", (review_member("f2", 1.0),)),
        ReviewGroup(
            "f3", (review_member("turned", 5.0, kind="rotation"), review_member(HOSTILE, 0.5))
        ),
    ]
    clusters = [ReviewCluster("f4", ("f4", "f5"), (review_link("f4", "f5", 22),))]
    out = tmp_path / "out"
    split_of = {"f1": "train", "f3": "test", "f4": "validation", "f5": "validation"}
    index = write_review_page(
        out, groups, clusters, films.__getitem__, title="t", synthetic=True, split_of=split_of
    )
    _screenshot(_chromium(), index, tmp_path / "profile", tmp_path / "review.png")
    probe = out / "probe.html"  # beside the page, so the relative thumbnail paths resolve
    probe.write_text(index.read_text("utf-8").replace("</body>", PROBE), "utf-8")

    dom = _dump_dom(_chromium(), probe, tmp_path / "profile")
    rendered = Page(dom)
    assert rendered.body.get("data-probe") == "ran"
    assert "<title>t</title>" in dom  # the hostile id's script did not run
    assert rendered.tags.count("script") == 3  # the page's two and the probe; the id none
    assert rendered.order("group") == ["f3", "f1"]
    assert rendered.order("cluster") == ["f4"]
    assert "kept f3 in test" in rendered.of("f3") and "all in validation" in rendered.of("f4")
    # the portrait "turned" block's table sits where the landscape blocks' tables sit
    offsets = {(m["data-table-left"], m["data-table-top"]) for m in rendered.members}
    assert len(rendered.members) == 3 and len(offsets) == 1, rendered.members
    widths = {image["alt"]: int(image["data-natural-width"]) for image in rendered.images}
    assert widths == {
        "f3": 192,
        "turned": 101,
        HOSTILE: 192,
        "f1": 192,
        "f2": 192,
        "f4": 192,
        "f5": 192,
    }

    # The probe does see a thumbnail that did not load.
    next((out / "thumbs").glob("_*.jpg")).unlink()
    rendered = Page(_dump_dom(_chromium(), probe, tmp_path / "profile"))
    widths = {image["alt"]: int(image["data-natural-width"]) for image in rendered.images}
    assert widths[HOSTILE] == 0 and widths["turned"] == 101


READER = """
  found.summary = onScreen(document.getElementById("summary"));
  const film = document.querySelector(".member img");
  found.film = onScreen(film) && film.naturalWidth > 0;
  film.click();
  const viewer = document.getElementById("viewer");
  found.open = viewer.open;
  found.shown = [];
  for (const image of viewer.querySelectorAll("image")) {
    const href = image.getAttribute("href");
    found.shown.push([href, await loaded(href)]);
  }
  found.boxes = viewer.querySelectorAll("rect.lesion").length;
  found.viewOnScreen = onScreen(viewer.querySelector("svg"));
  found.scrollWidthOpen = document.scrollingElement.scrollWidth;
  viewer.close();
  const visible = () => [...document.querySelectorAll("[data-reason]")]
    .filter((row) => row.getClientRects().length > 0)
    .map((row) => `${row.dataset.split}/${row.dataset.kind}/${row.dataset.reason}`);
  const choose = (name, value) => {
    const select = document.querySelector(`#filters select[name=${name}]`);
    select.value = value;
    select.dispatchEvent(new Event("change"));
  };
  found.all = visible();
  choose("kind", "noised");
  found.noised = visible();
  found.groups = [...document.querySelectorAll("section.group")]
    .filter((group) => group.getClientRects().length > 0).map((group) => group.dataset.kept);
  choose("kind", "");
  choose("split", "not in the dataset");
  found.rejected = visible();
  found.counter = document.getElementById("shown").value;
"""


@needs_chromium
@pytest.mark.parametrize("screen", SCREENS, ids=lambda s: f"{s[0]}px")
def test_at_two_widths_a_film_on_the_first_screen_opens_with_its_boxes_and_filters_hide_rows(
    tmp_path, films, screen
):
    groups = [
        ReviewGroup("f1", (review_member("f2", 2.0), review_member("f3", 1.0, kind="noised"))),
        ReviewGroup("f4", (review_member("f5", 1.0, kind="noised"),)),
    ]
    clusters = [ReviewCluster("f6", ("f6", "f7"), (review_link("f6", "f7", 12),))]
    lesions = {
        "f1": (Lesion((0.1, 0.2, 0.3, 0.4), 4), Lesion((0.6, 0.5, 0.7, 0.9), 5)),
        "f2": (Lesion((0.2, 0.2, 0.4, 0.5), 3),),
    }
    rejected = [
        RejectedFile("films/bad.jpg", "image", "not a JPEG: PNG data"),
        RejectedFile("notes/bad.xml", "annotation", "annotation without an image"),
    ]
    split_of = {"f1": "train", "f4": "test", "f6": "validation", "f7": "validation"}
    index = write_review_page(
        tmp_path / "out",
        groups,
        clusters,
        films.__getitem__,
        title="t",
        synthetic=True,
        split_of=split_of,
        rules=RuleCounts(folder_rule=3, same_picture=3, bad_file=1),
        lesions=lambda film: lesions.get(film, ()),
        rejected=rejected,
    )
    screenshot(index, screen, tmp_path / f"review-{screen[0]}.png")
    screenshot(index, screen, tmp_path / f"review-{screen[0]}-view.png", "view-1")
    found = probe(index, screen, READER)

    assert found["innerWidth"] == screen[0]
    assert found["scrollWidth"] <= found["innerWidth"], found  # no sideways scroll
    assert found["scrollWidthOpen"] <= found["innerWidth"], found
    assert found["summary"] and found["film"], found  # both on the first screen
    # The first pair (kept f1 | dropped f2, the closest call) opens at full size, boxes drawn.
    assert found["open"] and found["viewOnScreen"], found
    assert found["shown"] == [["films/f1.jpg", 480], ["films/f2.jpg", 480]]
    assert found["boxes"] == 3
    assert found["all"] == [
        "train/mirror/same picture as a kept film",
        "train/noised/same picture as a kept film",
        "test/noised/same picture as a kept film",
        "validation/look-alike cluster/look-alike by hash",
        "not in the dataset/image/not a JPEG",
        "not in the dataset/annotation/annotation without an image",
    ]
    assert found["noised"] == [found["all"][1], found["all"][2]]
    assert found["groups"] == ["f1", "f4"]
    assert found["rejected"] == found["all"][4:]
    assert found["counter"] == "showing 2 of 6 rows"


@needs_chromium
@pytest.mark.parametrize("screen", SCREENS, ids=lambda s: f"{s[0]}px")
def test_the_sample_builds_page_fits_the_screen_with_a_film_first_and_every_rejected_file(
    sample_build: Path, screen, tmp_path
):
    import pyarrow.parquet as pq

    page = sample_build / "review" / "index.html"
    found = probe(page, screen, READER)
    screenshot(page, screen, tmp_path / f"sample-review-{screen[0]}.png")
    assert found["scrollWidth"] <= found["innerWidth"] == screen[0], found
    assert found["summary"] and found["film"] and found["open"], found
    assert found["shown"], found  # each film opens at its own full width, not a thumbnail's
    for href, width in found["shown"]:
        with Image.open(sample_build / "review" / href) as full:
            assert width == full.width > THUMB_BOX[0], (href, width)
    rows = pq.read_table(sample_build / "manifest.parquet").to_pylist()
    refused = {(r["path"], r["reason"]) for r in rows if r["fate"] == "rejected"}
    listed = re.findall(
        r'<tr data-split="not in the dataset"[^>]*><td>(.*?)</td><td>\w+</td><td>(.*?)</td>',
        page.read_text("utf-8"),
    )
    assert {(unescape(p), unescape(r)) for p, r in listed} == refused
    assert sum(kind == "image" for kind in [r["kind"] for r in rows if r["fate"] == "rejected"])
    assert len(found["rejected"]) == len(refused)
