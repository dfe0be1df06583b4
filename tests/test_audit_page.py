"""The audit's report.html shows hostile film ids and referral field names as text: a dataset
anyone published decides them, so none may open a tag, close an attribute or run a script."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from tests.test_audit import FAST, jpeg, run

HOSTILE_ID = "<script>document.title='owned'</script>\"><b>bold</b>|\n[a](javascript:x)&amp;"
HOSTILE_FIELD = '<i onmouseover="x">age</i>'
PAGE_TAGS = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "p", "ul", "li"}
PAGE_TAGS |= {"table", "tr", "th", "td", "img", "br"}


class Page(HTMLParser):
    """Tags, image alts and text, as a browser would read them."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.alts: list[str] = []
        self.text: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        if tag == "img":
            self.alts.append(dict(attrs)["alt"] or "")

    def handle_data(self, data: str) -> None:
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
    assert f"test / {HOSTILE_ID}" in page.alts  # the quote closed no attribute
    text = "".join(page.text)
    assert f"test / {HOSTILE_ID}" in text
    assert f"Referral field {HOSTILE_FIELD} is associated with label" in text
    assert HOSTILE_FIELD in page.text  # its own table cell
