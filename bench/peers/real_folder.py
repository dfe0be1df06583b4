"""The folder ``bench.peers.real`` measures on: every real development film (the 512-px films
and the grey archive-sized ones of ``../shared/realfilms-dev``, read in place), each filed with
``COPIES`` altered copies among the originals, in the archive's layout."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
from PIL import Image

from bench.common.real_films import REAL_FILMS
from bench.same_picture.alterations import ALTERATIONS, jpeg
from curation.sample.annotations import Annotation, annotation_xml
from curation.sample.layout import ANNOTS_DIR, ORIGINAL_DIR, ORIGINAL_FOLDER

NATIVE_FILMS = REAL_FILMS.parent / "films-native"
COPIES = 3  # altered copies filed with each original
TRUTH_FILE = "truth.json"  # beside the source: every stem -> the stem of its original


def _originals(archive_sized: bool = False) -> list[tuple[str, np.ndarray]]:
    """Every real development film, grey, by name (the 512-px films, then the native ones);
    ``archive_sized``: the native ones alone, at the archive's own size."""
    found = []
    for folder in (NATIVE_FILMS,) if archive_sized else (REAL_FILMS, NATIVE_FILMS):
        for path in sorted(folder.glob("*.jpg")):
            with Image.open(path) as image:
                found.append((path.stem, np.asarray(image.convert("L"))))
    return found


def _annotation(stem: str, width: int, height: int) -> bytes:
    box = (str(width // 3), str(height // 3), str(width // 2), str(height // 2))
    note = Annotation(stem, ORIGINAL_FOLDER, width, height, 1, [("3", *box)], f"{stem}.jpg")
    return annotation_xml(note)


def write_folder(
    work: Path, copies: int = COPIES, films: int | None = None, archive_sized: bool = False
) -> dict[str, str]:
    """The real films (``archive_sized``: the archive-sized ones alone) and their copies in
    the archive's layout below ``work / "source"``; every stem -> the stem of its original
    (an original -> itself), also written to ``work / TRUTH_FILE``."""
    source = work / "source"
    shutil.rmtree(source, ignore_errors=True)
    (source / ORIGINAL_DIR).mkdir(parents=True)
    (source / ANNOTS_DIR).mkdir(parents=True)
    kinds = list(ALTERATIONS)
    truth: dict[str, str] = {}

    def write(stem: str, data: bytes) -> None:
        (source / ORIGINAL_DIR / f"{stem}.jpg").write_bytes(data)
        with Image.open(source / ORIGINAL_DIR / f"{stem}.jpg") as image:
            width, height = image.size
        (source / ANNOTS_DIR / f"{stem}.xml").write_bytes(_annotation(stem, width, height))

    for number, (_, grey) in enumerate(_originals(archive_sized)[:films]):
        # Stems end in 1: the archive files originals so, and every film here is filed as one.
        original = f"1{number:04d}1"
        write(original, jpeg(grey, 95))
        truth[original] = original
        for copy in range(copies):
            kind = kinds[(number * copies + copy) % len(kinds)]
            picture, quality, mode = ALTERATIONS[kind](grey)
            stem = f"2{number * copies + copy:04d}1"
            write(stem, jpeg(picture, quality, mode))
            truth[stem] = original
    (work / TRUTH_FILE).write_text(json.dumps(truth, indent=1, sort_keys=True) + "\n")
    return truth
