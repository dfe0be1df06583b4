"""What the review page holds while it is written: one full-size film and a batch of
thumbnails at a time, and nothing left for the cyclic collector once it returns (traced, at
sizes that grow with the archive)."""

from __future__ import annotations

import gc
import random
import tracemalloc

from curation.hashes.thumbnails import Thumbnail, film_thumbnail
from curation.review.closeness import ReviewGroup
from curation.review.review import write_review_page
from tests.review.review_records import groups_and_clusters, noisy_jpeg, review_member


def test_the_page_holds_one_full_size_film_at_a_time_not_every_film_it_shows(tmp_path):
    """At a million films the page shows hundreds of thousands: each film's published JPEG is
    written as soon as it is made, so the bytes held while the page is written stay those of
    one film, whatever the number of films (traced: allocations of this process)."""
    source = tmp_path / "source"
    source.mkdir()
    films = {f"g{n:02d}": noisy_jpeg(source / f"g{n:02d}.jpg", (1600, 800), n) for n in range(16)}
    total = sum(path.stat().st_size for path in films.values())
    groups = [
        ReviewGroup(f"g{n:02d}", (review_member(f"g{n + 1:02d}", 1.0),)) for n in range(0, 16, 2)
    ]
    thumbs = {film: film_thumbnail(path) for film, path in films.items()}
    tracemalloc.start()
    try:
        write_review_page(
            tmp_path / "out",
            groups,
            [],
            films.__getitem__,
            title="t",
            synthetic=False,
            known=lambda ids: {film: thumbs[film] for film in ids},
        )
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(list((tmp_path / "out" / "films").iterdir())) == 16
    assert peak < total / 2, (peak, total)


def test_the_page_holds_a_batch_of_thumbnails_at_a_time_not_every_film_s(tmp_path):
    """The stored thumbnails are read, written and let go a batch at a time: holding every
    shown film's (about 2.6 KB each) grew with the archive. Each call to ``known`` makes new
    bytes, as reading the store does (traced: allocations of this process)."""
    film = noisy_jpeg(tmp_path / "film.jpg", (64, 32), 0)
    count, thumb_bytes = 1000, 16_384
    groups = [
        ReviewGroup(f"k{n:04d}", (review_member(f"d{n:04d}", 1.0),)) for n in range(count // 2)
    ]

    def known(ids: list[str]) -> dict[str, Thumbnail]:
        return {i: Thumbnail(random.Random(i).randbytes(thumb_bytes), (8, 4)) for i in ids}

    tracemalloc.start()
    try:
        write_review_page(
            tmp_path / "out", groups, [], lambda _: film, title="t", synthetic=False, known=known
        )
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    thumbs = sorted((tmp_path / "out" / "thumbs").iterdir())
    assert len(thumbs) == count and thumbs[0].read_bytes() == known(["d0000"])["d0000"].jpeg
    assert peak < count * thumb_bytes / 2, (peak, count * thumb_bytes)


def test_what_the_page_was_rendered_from_is_let_go_once_it_is_rendered(tmp_path):
    """Jinja's macros and the context they render in refer to each other, so the page's
    values (a view dict or two per shown film) outlived the page until the cyclic collector's
    next full pass, which a build holding millions of records runs seldom: at 8,000 originals
    they were still held while the build checked its shards. Nothing the page made is left
    for the cyclic collector once it returns."""
    film = noisy_jpeg(tmp_path / "film.jpg", (64, 32), 0)
    groups, clusters = groups_and_clusters(100)
    gc.collect()
    gc.disable()
    try:
        write_review_page(
            tmp_path / "out", groups, clusters, lambda _: film, title="t", synthetic=False,
            workers=1,
        )  # fmt: skip
        left = gc.collect()
    finally:
        gc.enable()
    assert left == 0
