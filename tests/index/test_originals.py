"""The originals step: a film is dropped by its name only as a copy of a film of the source."""

from __future__ import annotations

import os
from pathlib import Path

from curation.core.parallel import LocalMap
from curation.core.records import Fate, Kind
from curation.index.index import index_source
from curation.index.originals import drop_augmented_by_name
from tests.hostile_films import ANNOTS, FILMS, film_bytes, voc, write_source

AUGMENTATION = Path(FILMS).parent / "Augmentation JPG Images"


def _augmented(root: Path, stem: str, seed: int) -> None:
    (root / AUGMENTATION).mkdir(parents=True, exist_ok=True)
    (root / AUGMENTATION / f"{stem}.jpg").write_bytes(film_bytes(seed))
    (root / ANNOTS / f"{stem}.xml").write_text(voc(stem), encoding="utf-8")
    for path in root.rglob("*.*"):
        os.utime(path, ns=(10**18, 10**18))


def test_a_copy_of_a_source_film_is_dropped_naming_it_and_an_orphan_goes_on(tmp_path):
    """00012 is the noise copy of 00011, filed: dropped, ``related`` naming it. 00024 and 00031
    (the latter ending in 1) are found only in the augmentation folder: their originals
    (00021, and 00031 itself) are not films of the source, so each goes on as the film, its
    annotation read."""
    root = write_source(tmp_path / "source", {"00011": (film_bytes(1), voc("00011"))})
    _augmented(root, "00012", 1)
    _augmented(root, "00024", 2)
    _augmented(root, "00031", 3)
    records = drop_augmented_by_name(index_source(root, map=LocalMap(1)))
    films = {r.stem: r for r in records if r.kind is Kind.image}
    assert films["00012"].fate is Fate.dropped and films["00012"].related == "00011"
    for orphan in ("00024", "00031"):
        assert films[orphan].fate is Fate.pending and films[orphan].related == "", orphan
        assert len(films[orphan].lesions) == 1, orphan
    named = {r.related for r in records if r.related}
    assert named <= set(films)
