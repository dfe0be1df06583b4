"""The review page: order by closeness to the limits, escaping of hostile ids, determinism,
stale thumbnails, and a real headless Chromium loading the page from file://."""

from __future__ import annotations

import re
import shutil
import subprocess
from html import unescape
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from curation.core.records import Lesion
from curation.hashes.thumbnails import THUMB_BOX
from curation.review.closeness import (
    RejectedFile,
    ReviewCluster,
    ReviewError,
    ReviewGroup,
    ReviewLink,
    ReviewMember,
    RuleCounts,
)
from curation.review.review import write_review_page
from tests.browser import SCREENS, needs_chromium, probe, screenshot

# A script that would not block the browser if it ran (an alert would hang headless Chromium).
HOSTILE = "<script>document.title='owned'</script>../../escape"


class Page(HTMLParser):
    """What a reader of the page sees: sections in order, images, script tags, text."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.sections: list[tuple[str, str]] = []  # (class, data-kept or data-cluster)
        self.section_text: dict[str, list[str]] = {}  # by data-kept or data-cluster
        self.images: list[dict[str, str]] = []
        self.members: list[dict[str, str]] = []  # the attributes of each dropped film's block
        self.links: list[str] = []  # every href, in order
        self.ids: set[str] = set()
        self.tags: list[str] = []
        self.text: list[str] = []
        self.body: dict[str, str] = {}
        self._section: list[str] | None = None
        self._code = False  # inside <script> or <style>: no text a reader sees
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        self.tags.append(tag)
        self._code = tag in ("script", "style")
        if "id" in values:
            self.ids.add(values["id"])
        if tag == "section":
            key = values.get("data-kept") or values.get("data-cluster", "")
            self.sections.append((values["class"], key))
            self._section = self.section_text.setdefault(key, [])
        elif tag == "img":
            self.images.append(values)
        elif tag == "body":
            self.body = values
        elif tag == "a":
            self.links.append(values["href"])
        elif tag == "div" and values.get("class") == "member":
            self.members.append(values)

    def handle_endtag(self, tag: str) -> None:
        self._code = False
        if tag == "section":
            self._section = None

    def handle_data(self, data: str) -> None:
        if self._code:
            return
        self.text.append(data)
        if self._section is not None:
            self._section.append(data)

    def of(self, key: str) -> str:
        """The text of the section of group (kept film) or cluster ``key``."""
        return "".join(self.section_text[key])

    def order(self, kind: str) -> list[str]:
        return [key for css, key in self.sections if css == kind]


def _jpeg(path: Path, size: tuple[int, int], seed: int) -> Path:
    """A small noisy grey film (noise so no two films look alike)."""
    rng = np.random.default_rng(seed)
    pixels = rng.integers(0, 256, (size[1] // 8, size[0] // 8), dtype=np.uint8)
    Image.fromarray(pixels).resize(size).save(path, quality=85)
    return path


def _member(film: str, difference: float, limit: float = 6.0, kind: str = "mirror") -> ReviewMember:
    return ReviewMember(film, False, kind, "mirror", 4, difference, limit, f"{film} is a copy.")


def _link(a: str, b: str, distance: int | None) -> ReviewLink:
    reason = "same patient number" if distance is None else f"hash distance {distance}"
    return ReviewLink(a, b, reason, distance, 30)


@pytest.fixture
def films(tmp_path: Path) -> dict[str, Path]:
    """Landscape films like panoramic radiographs, scaled down, and one turned film."""
    source = tmp_path / "source"
    source.mkdir()
    ids = [f"f{i}" for i in range(1, 10)] + [HOSTILE]
    paths = {film: _jpeg(source / f"{n}.jpg", (480, 252), n) for n, film in enumerate(ids)}
    paths["turned"] = _jpeg(source / "turned.jpg", (252, 480), 99)
    return paths


def _write(out: Path, films: dict[str, Path], groups, clusters, synthetic: bool = False) -> str:
    index = write_review_page(
        out, groups, clusters, films.__getitem__, title="Review <b>", synthetic=synthetic
    )
    assert index == out / "index.html"
    return index.read_text("utf-8")


def test_groups_are_ordered_by_their_largest_difference_to_limit_ratio(tmp_path, films):
    # By absolute difference f1 would come first, by id too; by ratio f7 (5.5/6) leads.
    groups = [
        ReviewGroup("f1", (_member("f2", 8.0, limit=20.0), _member("f3", 1.0))),  # 0.40
        ReviewGroup("f4", (_member("f5", 2.0), _member("f6", 4.5))),  # 0.75
        ReviewGroup("f7", (_member("f8", 5.5),)),  # 0.92
    ]
    page = Page(_write(tmp_path / "out", films, groups, []))
    assert page.order("group") == ["f7", "f4", "f1"]
    text = "".join(page.text)
    assert "5.50 of limit 6.00" in text and "8.00 of limit 20.00" in text
    # within a group the dropped film closest to its limit comes first
    assert text.index("f6") < text.index("f5")


def test_clusters_are_ordered_by_the_weakest_link_they_need_not_the_largest_link(tmp_path, films):
    # Cluster f1 holds a redundant 29-bit link (a cycle); the link it needs is 27 bits.
    # Cluster f4 needs its single 28-bit link, so it is the closer call.
    cycle = ReviewCluster(
        "f1",
        ("f1", "f2", "f3"),
        (_link("f1", "f2", 27), _link("f2", "f3", 12), _link("f1", "f3", 29)),
    )
    single = ReviewCluster("f4", ("f4", "f5"), (_link("f4", "f5", 28),))
    # A patient link holds f7 and f8 whatever the hash distance, so 25 bits is not needed.
    patient = ReviewCluster(
        "f6",
        ("f6", "f7", "f8"),
        (_link("f7", "f8", None), _link("f6", "f7", 20), _link("f6", "f8", 25)),
    )
    # A 0-bit link ties with the patient link on ratio; the patient link still holds the cluster.
    only_patient = ReviewCluster(
        "f9", ("f9", "turned"), (_link("f9", "turned", 0), _link("f9", "turned", None))
    )
    lone = ReviewCluster("lone", ("lone",), ())
    clusters = [only_patient, patient, lone, cycle, single]
    html = _write(tmp_path / "out", films, [], clusters)
    page = Page(html)
    assert page.order("cluster") == ["f4", "f1", "f6", "f9"]
    text = "".join(page.text)
    assert "27 of 30 bits (margin 3)weakest needed link" in text
    assert "29 of 30 bits (margin 1)not needed: films already joined" in text
    assert "20 of 30 bits (margin 10)weakest needed link" in text
    assert "25 of 30 bits (margin 5)not needed: films already joined" in text
    assert "held by patient links only" in text and "patient link (no threshold)" in text
    # the 0-bit link beside the patient link decides nothing, and says so
    assert "0 of 30 bits (margin 30)not needed: films already joined" in text
    assert "clusters held by patient links only1" in text
    assert "lone" not in text  # single-film clusters are not decisions


def test_every_film_gets_a_thumbnail_and_a_turned_film_stays_portrait(tmp_path, films):
    groups = [ReviewGroup("f1", (_member("turned", 3.0, kind="rotation"), _member("f2", 1.0)))]
    out = tmp_path / "out"
    page = Page(
        _write(out, films, groups, [ReviewCluster("f3", ("f3", "f4"), (_link("f3", "f4", 9),))])
    )
    shown = {image["alt"]: image for image in page.images}
    assert sorted(shown) == ["f1", "f2", "f3", "f4", "turned"]
    for image in page.images:
        with Image.open(out / image["src"]) as thumb:
            assert thumb.size == (int(image["width"]), int(image["height"]))
            assert max(thumb.size) <= 192
    assert (int(shown["turned"]["width"]), int(shown["turned"]["height"])) == (101, 192)
    assert (int(shown["f1"]["width"]), int(shown["f1"]["height"])) == (192, 101)


def test_hostile_ids_and_evidence_are_escaped_and_thumbnails_stay_in_their_folder(tmp_path, films):
    evil = ReviewMember(
        HOSTILE, False, "<i>noised</i>", "identity", 2, 1.0, 6.0, "<img src=x onerror=alert(1)>"
    )
    clusters = [
        ReviewCluster(HOSTILE, (HOSTILE, "f2"), (ReviewLink(HOSTILE, "f2", "<b>x", 3, 30),))
    ]
    out = tmp_path / "out"
    html = _write(out, films, [ReviewGroup("f1", (evil,))], clusters)
    page = Page(html)
    assert page.tags.count("script") == 2  # the page's own two; the hostile id made none
    assert "b" not in page.tags and "i" not in page.tags
    assert [image["alt"] for image in page.images].count(HOSTILE) == 2
    assert all(not image["src"].startswith("x") for image in page.images)
    text = "".join(page.text)
    assert HOSTILE in text and "<img src=x onerror=alert(1)>" in text and "Review <b>" in text
    assert not (tmp_path / "escape").exists() and not (tmp_path / "escape.jpg").exists()
    written = sorted(p.name for p in (out / "thumbs").iterdir())
    assert len(written) == 3 and all("/" not in name and "<" not in name for name in written)


def test_the_page_is_self_contained(tmp_path, films):
    groups = [ReviewGroup("f1", (_member("f2", 1.0),))]
    html = _write(tmp_path / "out", films, groups, [])
    page = Page(html)
    assert "http:" not in html and "https:" not in html
    assert page.tags.count("script") == 2 and "<script src" not in html  # inline only
    assert all(image["src"].startswith("thumbs/") for image in page.images)
    assert all(href.startswith(("#", "films/")) for href in page.links)
    assert re.findall(r'<image href="([^"]+)"', html) == ["films/f1.jpg", "films/f2.jpg"]


def test_same_inputs_give_identical_bytes_and_a_rerun_removes_stale_thumbnails(tmp_path, films):
    groups = [ReviewGroup("f1", (_member("f2", 1.0), _member(HOSTILE, 2.0)))]
    clusters = [ReviewCluster("f3", ("f3", "f4"), (_link("f3", "f4", 9),))]

    def files(out: Path) -> dict[str, bytes]:
        return {
            str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()
        }

    _write(tmp_path / "a", films, groups, clusters)
    _write(tmp_path / "b", films, groups, clusters)
    first = files(tmp_path / "a")
    assert first == files(tmp_path / "b")
    assert len(first) == 11  # the page, five thumbnails and five full-size films

    (tmp_path / "a" / "thumbs" / ".f9.jpg.123.tmp").write_bytes(b"left by a crash")
    _write(tmp_path / "a", films, [ReviewGroup("f1", (_member("f2", 1.0),))], [])
    assert sorted(files(tmp_path / "a")) == [
        "films/f1.jpg",
        "films/f2.jpg",
        "index.html",
        "thumbs/f1.jpg",
        "thumbs/f2.jpg",
    ]
    assert files(tmp_path / "a")["thumbs/f1.jpg"] == first["thumbs/f1.jpg"]


def test_banner_only_for_the_synthetic_sample_and_summary_counts(tmp_path, films):
    groups = [
        ReviewGroup("f1", (_member("f2", 1.0), _member("f3", 1.0, kind="noised"))),
        ReviewGroup("f4", (_member("f5", 1.0, kind="re-filing"),)),
    ]
    clusters = [
        ReviewCluster("f6", ("f6", "f7", "f8"), (_link("f6", "f7", 3), _link("f7", "f8", None)))
    ]
    real = "".join(Page(_write(tmp_path / "real", films, groups, clusters)).text)
    synthetic = "".join(Page(_write(tmp_path / "syn", films, groups, clusters, True)).text)
    assert "Synthetic sample" in synthetic and "Synthetic sample" not in real
    assert "same-picture groups2" in real
    assert "dropped as the same picture as a kept film3 (mirror 1, noised 1, re-filing 1)" in real
    assert "multi-film look-alike clusters1" in real and "films in those clusters3" in real


def test_an_unreadable_film_is_shown_as_missing_with_the_reason(tmp_path, films):
    broken = tmp_path / "broken.jpg"
    broken.write_bytes(b"not a jpeg")
    sources = {**films, "broken": broken, "gone": tmp_path / "gone.jpg"}
    groups = [ReviewGroup("f1", (_member("broken", 1.0), _member("gone", 2.0)))]
    out = tmp_path / "out"
    page = Page(_write(out, sources, groups, []))
    text = "".join(page.text)
    assert "thumbnail unavailable: broken.jpg is not a readable image." in text
    assert "thumbnail unavailable: gone.jpg does not exist." in text
    assert "thumbnails unavailable2" in text
    assert {image["alt"] for image in page.images} == {"f1"}
    assert "full-size film unavailable: broken: broken.jpg is not a publishable JPEG" in text
    assert "gone: gone.jpg does not exist." in text


@pytest.mark.parametrize(
    ("groups", "clusters", "message"),
    [
        (
            [ReviewGroup("f1", (_member("f2", 1.0, limit=0.0),))],
            [],
            "'f2' has measurement 1.0 against limit 0.0",
        ),
        ([ReviewGroup("f1", (_member("f2", float("nan")),))], [], "'f2' has measurement nan"),
        (
            [],
            [ReviewCluster("f1", ("f1", "f2"), (_link("f1", "f3", 4),))],
            "'f1' and 'f3', which are not both",
        ),
        (
            [ReviewGroup("f1", (ReviewMember("f1", True, "", "identity", 0, 0.0, 6.0, "kept"),))],
            [],
            "Group 'f1' lists 'f1' as kept among its dropped films",
        ),
        (
            [],
            [ReviewCluster("f1", ("f1", "f2", "f3"), (_link("f1", "f2", 4),))],
            "films no listed link connects",
        ),
    ],
)
def test_contradictory_records_are_refused_in_one_sentence_before_anything_is_written(
    tmp_path, films, groups, clusters, message
):
    with pytest.raises(ReviewError, match=message) as error:
        _write(tmp_path / "out", films, groups, clusters)
    assert str(error.value).count(". ") == 0 and str(error.value).endswith(".")
    assert not (tmp_path / "out").exists()


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
        ReviewGroup("f1", (_member("f2", 1.0),)),
        ReviewGroup("f3", (_member("turned", 5.0, kind="rotation"), _member(HOSTILE, 0.5))),
    ]
    clusters = [ReviewCluster("f4", ("f4", "f5"), (_link("f4", "f5", 22),))]
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


def test_every_group_and_cluster_says_its_split_and_each_rule_its_count(tmp_path, films):
    near_member = ReviewMember("f2", False, "mirror", "mirror", 1, 5.5, 6.0, "f2 is the copy.")
    groups = [ReviewGroup("f1", (near_member,)), ReviewGroup("f3", (_member("f4", 1.0),))]
    clusters = [
        ReviewCluster("f5", ("f5", "f6"), (_link("f5", "f6", 29),)),
        ReviewCluster("f7", ("f7", "f8"), (_link("f7", "f8", 3),)),
    ]
    split_of = {"f1": "validation", "f3": "train", "f5": "test", "f6": "test"}
    split_of |= {"f7": "train", "f8": "train"}
    index = write_review_page(
        tmp_path / "out",
        groups,
        clusters,
        films.__getitem__,
        title="t",
        synthetic=False,
        split_of=split_of,
        rules=RuleCounts(folder_rule=214, same_picture=2, bad_file=7),
    )
    page = Page(index.read_text("utf-8"))

    assert "kept f1 in validation" in page.of("f1") and "f1kept, validation" in page.of("f1")
    assert "f2dropped: the same picture as f1" in page.of("f1")
    assert "kept f3 in train" in page.of("f3")
    assert "all in test" in page.of("f5") and "f6test" in page.of("f5")
    assert "all in train" in page.of("f7")
    text = "".join(page.text)
    assert "films in the datasettrain 3, validation 1, test 2" in text
    assert "dropped by the folder rule (augmented copies)214" in text
    assert "dropped as the same picture as a kept film2 (mirror 2)" in text
    assert "rejected as bad files7" in text
    assert "hash distance1 bit" in text and "1 bits" not in text
    # Near-limit decisions first (cluster f5 at 97%, group f1 at 92%), each a working link.
    assert page.links[:2] == ["#cluster-1", "#group-1"]
    anchors = [link for link in page.links if link.startswith("#")]
    assert all(link.removeprefix("#") in page.ids for link in anchors)
    assert {"group-1", "group-2", "cluster-1", "cluster-2"} <= page.ids  # each once, anchored


def test_the_sample_builds_page_says_each_groups_and_clusters_split(sample_build: Path):
    import pyarrow.parquet as pq

    rows = pq.read_table(sample_build / "manifest.parquet").to_pylist()
    split_of = {
        r["film_id"]: r["reason"].removeprefix("kept: ")
        for r in rows
        if r["kind"] == "image" and r["fate"] == "kept"
    }
    page = Page((sample_build / "review" / "index.html").read_text("utf-8"))
    groups, clusters = page.order("group"), page.order("cluster")
    assert groups and clusters
    for kept in groups:
        assert f"kept {kept} in {split_of[kept]}" in page.of(kept)
    for cluster in clusters:
        assert f"all in {split_of[cluster]}" in page.of(cluster)
    dropped = sum(r["kind"] == "image" and r["fate"] == "dropped" for r in rows)
    text = "".join(page.text)
    folder = int(re.search(r"dropped by the folder rule \(augmented copies\)(\d+)", text)[1])
    same = int(re.search(r"dropped as the same picture as a kept film(\d+)", text)[1])
    assert folder + same == dropped and folder > 0 and same > 0


# The first screen, a click on the first film and the filters, as a reader meets them.
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
        ReviewGroup("f1", (_member("f2", 2.0), _member("f3", 1.0, kind="noised"))),
        ReviewGroup("f4", (_member("f5", 1.0, kind="noised"),)),
    ]
    clusters = [ReviewCluster("f6", ("f6", "f7"), (_link("f6", "f7", 12),))]
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
        lesions_of=lesions,
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


def _views(html: str) -> dict[str, str]:
    """Each enlarged view's markup, by its id."""
    return dict(re.findall(r'<template id="(view-\d+)">(.*?)</template>', html, flags=re.DOTALL))


def test_the_sample_builds_views_draw_each_films_boxes_and_the_framed_copies_features(
    sample_build: Path,
):
    import pyarrow.parquet as pq

    html = (sample_build / "review" / "index.html").read_text("utf-8")
    views = _views(html)
    lesions = {}
    for shard in sorted((sample_build / "dataset" / "data").glob("*.parquet")):
        for row in pq.read_table(shard, columns=["film_id", "lesions"]).to_pylist():
            lesions[row["film_id"]] = len(row["lesions"])
    # A cluster's film opens alone: one box per lesion its dataset row has.
    singles = re.findall(r'data-view="(view-\d+)" title="enlarge ([^"]+)"', html)
    alone = [(view, film) for view, film in singles if views[view].count("<image ") == 1]
    for view, film in alone:
        assert views[view].count('<rect class="lesion"') == lesions[film], film
    assert alone and any(lesions[film] for _, film in alone)
    # Copies under another frame open with their matched features drawn; whole-frame ones not.
    members = re.findall(
        r'<div class="member"[^>]* data-kind="([^"]+)"[^>]*><figure class="kept">'
        r'<div class="thumb"><a class="open" href="[^"]*" data-view="(view-\d+)"',
        html,
    )
    framed = {"cropped", "padded", "rotated", "re-toned"}
    assert {kind for kind, _ in members} & framed
    for kind, view in members:
        if kind in framed:
            assert "<line " in views[view], (kind, view)
        elif kind != "re-filing":  # a re-filing is whole-frame, or framed when a lesion was drawn
            assert "<line " not in views[view], (kind, view)


def test_a_visit_link_opens_both_films_and_says_when_their_features_do_not_agree(tmp_path, films):
    # f6 and f7 are unrelated noise: the link claims a visit, the page matches them again and
    # draws nothing rather than lines between unrelated points.
    visit = ReviewLink("f6", "f7", "visit of one patient (90 matched features)", 20, 30, True)
    html = _write(tmp_path / "out", films, [], [ReviewCluster("f6", ("f6", "f7"), (visit,))])
    [view] = re.findall(r'<a href="#(view-\d+)" data-view="\1">matched features</a>', html)
    drawn = _views(html)[view]
    assert re.findall(r'<image href="([^"]+)"', drawn) == ["films/f6.jpg", "films/f7.jpg"]
    assert "<line " not in drawn
    assert "no matched features to draw (the two films&#39; features disagree)" in drawn
