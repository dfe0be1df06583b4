"""Review thumbnails come from the hash step's decode: the page decodes no film again."""

from __future__ import annotations

import io
import tracemalloc

import numpy as np
from PIL import Image

import curation.review.review as review
from curation.chain.executors import LocalExecutor
from curation.chain.runner import Settings, curate
from curation.core.parallel import LocalMap
from curation.core.records import Fate, Kind, pending_images
from curation.hashes.hash_films import hash_films
from curation.hashes.thumbnails import (
    THUMBNAILS_STORE,
    film_thumbnail,
    read_thumbnails,
    thumbnail_store,
)


def _pixels(jpeg: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(jpeg)).convert("L"))


def test_the_hash_step_leaves_the_thumbnail_of_every_film_it_hashed(sample_source, tmp_path):
    outcome = curate(sample_source, tmp_path, Settings(), "hash", executor=LocalExecutor(1))
    hashes = outcome.products["hashes"]
    hashed = {r.sha256: r for r in outcome.records if r.kind is Kind.image and r.film_id in hashes}
    thumbs = read_thumbnails(thumbnail_store(tmp_path / "cache" / THUMBNAILS_STORE), hashed)
    assert set(thumbs) == set(hashed) and len(hashed) > 100
    for sha in sorted(hashed)[:5]:  # the same pixels as a thumbnail decoded on its own
        alone = film_thumbnail(sample_source.root / hashed[sha].path)
        assert thumbs[sha].size == alone.size
        assert np.array_equal(_pixels(thumbs[sha].jpeg), _pixels(alone.jpeg))


def test_the_review_page_decodes_no_film_the_hash_step_saw(sample_source, tmp_path, monkeypatch):
    decoded_for_the_page: list = []

    def recording_map(function, jobs, workers=0, chunksize=16):
        decoded_for_the_page.extend(jobs)
        return map(function, jobs)

    monkeypatch.setattr(review, "ordered_map", recording_map)
    outcome = curate(sample_source, tmp_path, Settings(), executor=LocalExecutor(1))
    page = (tmp_path / "review" / "index.html").read_text()
    shown = [
        r.film_id
        for r in outcome.records
        if r.kind is Kind.image
        and r.fate in (Fate.kept, Fate.dropped)
        and f"{r.film_id}.jpg" in page
    ]
    assert decoded_for_the_page == [] and len(shown) > 20
    assert all((tmp_path / "review" / "thumbs" / f"{film}.jpg").is_file() for film in shown)


def _driver_peak(root, films, store) -> int:
    """The driver's traced peak while two worker processes hash ``films``."""
    tracemalloc.start()
    try:
        hash_films(root, films, map=LocalMap(2), thumbnails=store)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_driver_holds_under_2_kib_a_film_while_hashing(sample_source, tmp_path):
    """The workers store each thumbnail they make and the hashes are held column-wise: what
    the driver's peak grows by per film hashed (the slope from 10 films to all of the
    sample's) stays under 2 KiB, about 1.1 KB measured. When the thumbnails came back with
    the hashes and each film's hashes were five ``bytes`` in a dict, it grew by 4.3 KB."""
    before = curate(sample_source, tmp_path, Settings(), "originals", executor=LocalExecutor(1))
    films = pending_images(before.records)
    few = _driver_peak(sample_source.root, films[:10], thumbnail_store(tmp_path / "few"))
    every = _driver_peak(sample_source.root, films, thumbnail_store(tmp_path / "every"))
    assert len(films) > 100
    assert (every - few) / (len(films) - 10) < 2048
