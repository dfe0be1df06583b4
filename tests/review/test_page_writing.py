"""A page is written as Jinja renders it: a page of every film a large archive shows was held
whole three times over while it was written (its escaped pieces, their join, the encoded
bytes), on top of the values it was rendered from."""

import tracemalloc
from typing import Any

import pytest

import curation.review.review as review
from curation.review.closeness import ReviewCluster, ReviewGroup
from curation.review.pages import render_page, write_page
from tests.review.review_records import noisy_jpeg, review_link, review_member


@pytest.fixture
def page_values(tmp_path, monkeypatch) -> dict[str, Any]:
    """The review template's values for 300 groups and 300 clusters, as the page makes them."""
    film = noisy_jpeg(tmp_path / "film.jpg", (64, 32), 0)
    groups = [ReviewGroup(f"k{n:03d}", (review_member(f"d{n:03d}", 1.0),)) for n in range(300)]
    clusters = [
        ReviewCluster(f"c{n}", (f"a{n}", f"b{n}"), (review_link(f"a{n}", f"b{n}", 20),))
        for n in range(300)
    ]
    taken: dict[str, Any] = {}

    def take(_target, _template, **values) -> None:
        taken.update(values)

    monkeypatch.setattr(review, "write_page", take)
    review.write_review_page(
        tmp_path / "out", groups, clusters, lambda _: film, title="t", synthetic=False, workers=1
    )
    return taken


def test_a_page_is_written_as_it_is_rendered_not_held_whole(tmp_path, page_values):
    """Writing holds a small part of the page, and gives the bytes rendering it would give
    (rendered first, which also compiles the template before the memory is traced)."""
    rendered = render_page("review.html", **page_values).encode("utf-8")
    target = tmp_path / "index.html"
    tracemalloc.start()
    try:
        write_page(target, "review.html", **page_values)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    page = target.read_bytes()
    assert len(page) > 500_000  # the test's page is large enough for the bound below to mean much
    assert peak < len(page) / 4, (peak, len(page))
    assert page == rendered
