"""A page is written as Jinja renders it, its values made as it is written: a page of every
film a large archive shows was held whole three times over while it was written (its escaped
pieces, their join, the encoded bytes), beside its values for every group, cluster and
enlarged view, made before the first byte was written (about three times the page's size)."""

import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import curation.review.review as review
from curation.hashes.thumbnails import Thumbnail, film_thumbnail
from curation.review.pages import render_page, write_page
from tests.review.review_records import groups_and_clusters, noisy_jpeg


@pytest.fixture
def page_values(tmp_path, monkeypatch) -> dict[str, Any]:
    """The review template's values for 300 groups and 300 clusters, as the page makes them
    (the ones it makes as it writes, taken in the template's order and kept)."""
    film = noisy_jpeg(tmp_path / "film.jpg", (64, 32), 0)
    taken: dict[str, Any] = {}

    def take(_target, _template, **values) -> None:
        for name, value in values.items():
            taken[name] = list(value) if isinstance(value, Iterator) else value

    monkeypatch.setattr(review, "write_page", take)
    groups, clusters = groups_and_clusters(300)
    review.write_review_page(
        tmp_path / "out", groups, clusters, lambda _: film, title="t", synthetic=False, workers=1
    )
    return taken


def test_a_page_is_written_as_it_is_rendered_not_held_whole(tmp_path, page_values):
    """Writing holds a small part of the page, and gives the bytes rendering it would give
    (rendered first, which also compiles the template before the memory is traced)."""
    rendered = render_page("review.html", **page_values).encode("utf-8")
    target = tmp_path / "index.html"
    peak = _least_traced_peak(lambda: write_page(target, "review.html", **page_values))
    page = target.read_bytes()
    assert len(page) > 500_000  # the test's page is large enough for the bound below to mean much
    assert peak < len(page) / 4, (peak, len(page))
    assert page == rendered


def _least_traced_peak(write: Callable[[], object]) -> int:
    """The least traced peak of two runs of ``write``. A write can also grow a table the whole
    process shares, the one of interned strings, which pathlib adds each new file name to
    (each film's, and each temporary one): after a test that imported many modules, a write
    of 600 films once reallocated it whole, 3.7 MB held at the peak that the page did not
    cause. A table grown once has room for far more names than a second write adds."""
    peaks = []
    for _ in range(2):
        tracemalloc.start()
        try:
            write()
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
    return min(peaks)


def _peak_and_size(out: Path, film: Path, count: int) -> tuple[int, int]:
    """The traced peak of writing a page of ``count`` groups and clusters
    (``_least_traced_peak``), and its size."""
    groups, clusters = groups_and_clusters(count)
    thumb = film_thumbnail(film)
    assert isinstance(thumb, Thumbnail)

    def write() -> None:
        review.write_review_page(
            out, groups, clusters, lambda _: film, title="t", synthetic=False, workers=1,
            known=lambda ids: dict.fromkeys(ids, thumb),
        )  # fmt: skip

    return _least_traced_peak(write), (out / "index.html").stat().st_size


def test_a_page_s_values_are_made_as_it_is_written(tmp_path):
    """What writing the page holds grows by about one byte for each byte the page grows by
    (the films' sizes and names it keeps), against about three before (every group's, cluster's
    and view's values) and six before the page was written as it was rendered."""
    film = noisy_jpeg(tmp_path / "film.jpg", (64, 32), 0)
    _peak_and_size(tmp_path / "warm", film, 2)  # the template compiled, the imports made
    small_peak, small_size = _peak_and_size(tmp_path / "small", film, 150)
    large_peak, large_size = _peak_and_size(tmp_path / "large", film, 600)
    grew = (large_peak - small_peak) / (large_size - small_size)
    assert large_size > 1_500_000  # the page is large enough for the slope to mean much
    assert grew < 2.0, grew
