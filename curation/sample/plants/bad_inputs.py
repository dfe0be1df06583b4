"""The planted bad inputs: files the chain must reject, each with the reason it should give."""

from __future__ import annotations

import io

from PIL import Image

import curation.drawing.anatomy as anatomy
import curation.drawing.encoders as encoders
from curation.drawing.render import Output
from curation.drawing.sizes import BOMB_SIZE
from curation.sample.annotations import Annotation, objects_of
from curation.sample.layout import (
    ANNOTS_DIR,
    AUGMENTED_DIR,
    ORIGINAL_DIR,
    ORIGINAL_FOLDER,
)
from curation.sample.planner import Film, Planner
from curation.sample.truth import BadInput

_PLACEHOLDER_BOX = ((9, 9, 60, 60, 3),)


def _bad_film(
    planner: Planner,
    reason: str,
    *,
    xml: bool = True,
    mode: str | None = None,
    encoding: str = encoders.SYSTEM,
) -> Film:
    """A fresh patient filed as an original that the chain must reject for ``reason``."""
    patient, shots, family = planner.patient()
    boxes = anatomy.boxes_of(patient, shots[0]) or ((100, 200, 180, 260, 4),)
    film = planner.original(family, 0, boxes, mode=mode, encoding=encoding)
    if not xml:
        planner.annotations.pop()
    planner.bad.append(BadInput(f"{ORIGINAL_DIR}/{film.stem}.jpg", film.stem, reason))
    return film


def _bad_annotation(
    planner: Planner,
    reason: str,
    *,
    malformed: bool = False,
    objects: list[tuple[str, str, str, str, str]] | None = None,
) -> None:
    """A fresh film whose annotation the chain must reject for ``reason``."""
    film = _bad_film(planner, reason)
    note = planner.annotations[-1]
    note.malformed = malformed
    if objects is not None:
        note.objects = objects
    planner.bad[-1] = BadInput(f"{ANNOTS_DIR}/{film.stem}.xml", film.stem, reason)


def _loose(planner: Planner, reason: str, data: bytes, size: tuple[int, int]) -> None:
    """A file that is not a film at all, with a plausible XML beside it."""
    stem = planner.next_stem()
    planner.loose_files[f"{ORIGINAL_DIR}/{stem}.jpg"] = data
    planner.annotations.append(
        Annotation(stem, ORIGINAL_FOLDER, *size, 3, objects_of(_PLACEHOLDER_BOX))
    )
    planner.bad.append(BadInput(f"{ORIGINAL_DIR}/{stem}.jpg", stem, reason))


BLANK_FILM_SIZE = (2400, 1280)
BLANK_FILM_LEVEL = 6  # an unexposed film: near-black, the same grey everywhere


def blank_film_jpeg() -> bytes:
    """A film with no radiographic content: near-black and uniform, at an archive size."""
    buffer = io.BytesIO()
    Image.new("L", BLANK_FILM_SIZE, BLANK_FILM_LEVEL).save(buffer, "JPEG", quality=90)
    return buffer.getvalue()


def plan_bad_inputs(planner: Planner) -> None:
    """Plant every bad input once (the duplicate-stem cases name both of their files)."""
    stem = planner.next_stem()
    planner.annotations.append(
        Annotation(stem, ORIGINAL_FOLDER, 2400, 1280, 3, objects_of(_PLACEHOLDER_BOX))
    )
    planner.bad.append(BadInput(f"{ANNOTS_DIR}/{stem}.xml", stem, "annotation without image"))
    _bad_film(planner, "image without annotation", xml=False)
    _bad_film(planner, "truncated JPEG", encoding="truncated")
    _bad_film(planner, "CMYK JPEG", mode="CMYK", encoding="plain")
    _bad_film(
        planner, "16-bit grayscale (png data, mode I;16, under a .jpg name)", encoding="png16"
    )
    _loose(planner, "not an image", b"<html><body>Not found</body></html>\n", (2400, 1280))
    _loose(planner, "decompression bomb (header claims 240 MP)", encoders.bomb_jpeg(), BOMB_SIZE)
    _loose(planner, "blank film (no radiographic content)", blank_film_jpeg(), BLANK_FILM_SIZE)
    _bad_annotation(planner, "malformed XML", malformed=True)
    _bad_annotation(planner, "unknown grade '7'", objects=[("7", "300", "400", "380", "470")])
    _bad_annotation(
        planner, "unknown grade 'lesion'", objects=[("lesion", "300", "400", "380", "470")]
    )
    _bad_annotation(planner, "NaN coordinate", objects=[("4", "NaN", "400", "380", "470")])
    _bad_annotation(planner, "negative coordinate", objects=[("3", "300", "-14", "380", "470")])
    _bad_annotation(
        planner, "degenerate (zero-area) box", objects=[("5", "300", "400", "300", "470")]
    )
    film = _bad_film(planner, "duplicate stem (same stem, .jpg and .JPG)")
    film.family.outputs.append(
        Output(f"{ORIGINAL_DIR}/{film.stem}.JPG", 0, film.mode, film.quality + 5)
    )
    planner.bad.append(
        BadInput(f"{ORIGINAL_DIR}/{film.stem}.JPG", film.stem, planner.bad[-1].reason)
    )
    film = _bad_film(planner, "duplicate stem (same stem in two folders)")
    film.family.outputs.append(
        Output(f"{AUGMENTED_DIR}/{film.stem}.jpg", 0, "RGB", 75, encoding=encoders.SCRIPT)
    )
    planner.bad.append(
        BadInput(f"{AUGMENTED_DIR}/{film.stem}.jpg", film.stem, planner.bad[-1].reason)
    )
