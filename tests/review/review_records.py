"""The review page's test records: a hostile film id, noisy films, dropped members and
links, and a parser that reads the page as a reader sees it."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import numpy as np
from PIL import Image

from curation.review.closeness import ReviewCluster, ReviewGroup, ReviewLink, ReviewMember

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


def noisy_jpeg(path: Path, size: tuple[int, int], seed: int) -> Path:
    """A small noisy grey film (noise so no two films look alike)."""
    rng = np.random.default_rng(seed)
    pixels = rng.integers(0, 256, (size[1] // 8, size[0] // 8), dtype=np.uint8)
    Image.fromarray(pixels).resize(size).save(path, quality=85)
    return path


def review_member(
    film: str, difference: float, limit: float = 6.0, kind: str = "mirror"
) -> ReviewMember:
    return ReviewMember(film, False, kind, "mirror", 4, difference, limit, f"{film} is a copy.")


def review_link(a: str, b: str, distance: int | None) -> ReviewLink:
    reason = "same patient number" if distance is None else f"hash distance {distance}"
    return ReviewLink(a, b, reason, distance, 30)


def groups_and_clusters(count: int) -> tuple[list[ReviewGroup], list[ReviewCluster]]:
    """``count`` same-picture groups of one dropped film and ``count`` two-film clusters."""
    groups = [ReviewGroup(f"k{n:04d}", (review_member(f"d{n:04d}", 1.0),)) for n in range(count)]
    clusters = [
        ReviewCluster(f"c{n}", (f"a{n}", f"b{n}"), (review_link(f"a{n}", f"b{n}", 20),))
        for n in range(count)
    ]
    return groups, clusters
