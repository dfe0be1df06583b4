"""Encoder signatures: read by the index with the other header facts, and learned from every
film of the augmentation folder."""

from __future__ import annotations

import io

from PIL import Image

from curation.core.records import Fate, SourceRecord
from curation.index.index import Kind, file_facts
from curation.index.provenance import UNREADABLE
from curation.keeper.step import learn_encoders


def _jpeg(**options) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (320, 160), (90, 90, 90)).save(buffer, "JPEG", **options)
    return buffer.getvalue()


def test_the_index_reads_each_films_encoder_signature_from_its_header():
    script = file_facts(_jpeg(subsampling=2), Kind.image).encoder
    system = file_facts(_jpeg(subsampling=0, comment=b"scanner"), Kind.image).encoder
    assert script == "RGB|sampling=2|jfif"
    assert system == "RGB|sampling=0|jfif,comment"
    png = io.BytesIO()
    Image.new("L", (320, 160)).save(png, "PNG")
    assert file_facts(png.getvalue(), Kind.image).encoder == "format=PNG"
    assert file_facts(b"\xff\xd8 not a jpeg", Kind.image).encoder == UNREADABLE


def _film(folder: str, number: int, encoder: str) -> SourceRecord:
    stem = f"{number:06d}"
    return SourceRecord(f"{folder}/{stem}.jpg", Kind.image, stem, folder=folder, encoder=encoder)


def test_every_readable_augmented_film_is_evidence_and_nothing_else_is():
    """A 1,000-film sample (the rule before) never saw the last films' signature."""
    augmented = [_film("Augmentation JPG Images", n, "script") for n in range(1500)]
    augmented += [_film("Augmentation JPG Images", 2000 + n, "rare") for n in range(15)]
    others = [_film("Original JPG Images", n, "system") for n in range(40)]
    rejected = _film("Augmentation JPG Images", 3000, "broken").settle(Fate.rejected, "bad")
    evidence = learn_encoders([*augmented, *others, rejected])
    assert evidence.augmented == {"script": 1500, "rare": 15}
    assert evidence.script_share("rare") == 15 / 1515
    assert evidence.script_share("system") == 0.0
