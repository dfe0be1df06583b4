"""Step 2, index: one record per source file, with the problems that settle its fate early.

Images are checked from their header (format, mode, size); their pixels are decoded later by
the hash step, which rejects what fails to decode. Annotations are Pascal VOC XML; their
``<filename>`` is never read (it is unreliable and may carry a patient number). Boxes become
fractions of the true image size, read from the image and never from the XML.
"""

from __future__ import annotations

import hashlib
import math
import re
import warnings
import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from PIL import Image

from curation.originals import named_original
from curation.records import Fate, Kind, Lesion, SourceRecord

IMAGE_SUFFIXES = {".jpg", ".jpeg"}
ANNOTATION_FOLDER = "image annots"
STEM_PATTERN = re.compile(r"\d{5,6}")
ACCEPTED_MODES = {"L", "RGB"}
MAX_FILM_PIXELS = 40_000_000  # real films are ~3.3 MP; anything this large is a bomb
GRADES = {"3": 3, "4": 4, "5": 5}


class AnnotationError(ValueError):
    """An XML that cannot give trustworthy lesions; the message names the problem."""


@dataclass(frozen=True)
class RawBox:
    """A VOC box as written: pixel coordinates, maybe reversed, maybe outside the frame."""

    xmin: float
    ymin: float
    xmax: float
    ymax: float
    grade: str


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def parse_voc(path: Path) -> list[RawBox]:
    """Objects of a VOC file; raises ``AnnotationError`` on anything untrustworthy."""
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as error:
        raise AnnotationError(f"malformed XML ({error})") from None
    boxes = []
    for obj in root.iter("object"):
        grade = (obj.findtext("name") or "").strip()
        if grade not in GRADES:
            raise AnnotationError(f"unknown grade {grade!r} (expected 3, 4 or 5)")
        coords = []
        for tag in ("xmin", "ymin", "xmax", "ymax"):
            text = obj.findtext(f"bndbox/{tag}")
            try:
                value = float(text) if text is not None else math.nan
            except ValueError:
                raise AnnotationError(f"{tag} {text!r} is not a number") from None
            if not math.isfinite(value):
                raise AnnotationError(f"{tag} is {text!r}, not a finite number")
            if value < 0:
                raise AnnotationError(f"{tag} {value:g} is negative")
            coords.append(value)
        boxes.append(RawBox(*coords, grade=grade))
    return boxes


def to_lesions(boxes: list[RawBox], width: int, height: int) -> tuple[Lesion, ...]:
    """Fractional boxes: reversed corners swapped, clipped to the frame; zero area refused."""
    lesions = []
    for box in boxes:
        x1, x2 = sorted((box.xmin, box.xmax))
        y1, y2 = sorted((box.ymin, box.ymax))
        x1, x2 = min(x1, width) / width, min(x2, width) / width
        y1, y2 = min(y1, height) / height, min(y2, height) / height
        if not (x1 < x2 and y1 < y2):
            raise AnnotationError(
                f"degenerate box {box.xmin:g},{box.ymin:g},{box.xmax:g},{box.ymax:g}"
            )
        lesions.append(Lesion((x1, y1, x2, y2), GRADES[box.grade]))
    return tuple(sorted(lesions, key=lambda les: (les.box, les.pai)))


def image_header_problem(path: Path) -> tuple[str, int, int]:
    """``(problem, width, height)``; the problem is empty for a usable JPEG film."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(path) as image:
                width, height = image.size
                if image.format != "JPEG":
                    return f"not a JPEG: {image.format} data", width, height
                if width * height > MAX_FILM_PIXELS:
                    return f"decompression bomb: {width}x{height} px claimed", width, height
                if image.mode not in ACCEPTED_MODES:
                    return f"unsupported image mode: {image.mode}", width, height
                return "", width, height
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as error:
        return f"decompression bomb: {error}", 0, 0
    except Exception as error:  # Pillow raises many types for bad bytes; all mean "unreadable"
        return f"not a readable image: {type(error).__name__}: {error}", 0, 0


def _classify(root: Path, path: Path) -> SourceRecord:
    rel = path.relative_to(root).as_posix()
    folder = path.parent.name
    suffix = path.suffix.lower()
    if suffix in IMAGE_SUFFIXES:
        kind = Kind.image
    elif suffix == ".xml" and folder.lower() == ANNOTATION_FOLDER:
        kind = Kind.annotation
    else:
        return SourceRecord(rel, Kind.other, path.stem, folder=folder).settle(
            Fate.ignored, f"not part of the dataset: {suffix or 'no suffix'} file"
        )
    record = SourceRecord(
        rel,
        kind,
        path.stem,
        sha256=sha256_file(path),
        size_bytes=path.stat().st_size,
        folder=folder,
    )
    if not STEM_PATTERN.fullmatch(path.stem):
        return record.settle(Fate.rejected, "file name is not a 5-6 digit numeric stem")
    return record


def _reject_duplicate_stems(records: list[SourceRecord], kind: Kind) -> list[SourceRecord]:
    """Two files of one kind under one stem cannot be told apart: both are rejected."""
    by_stem: dict[str, list[str]] = defaultdict(list)
    for r in records:
        if r.kind is kind and r.fate is Fate.pending:
            by_stem[r.stem].append(r.path)
    out = []
    for r in records:
        paths = by_stem.get(r.stem, []) if r.kind is kind and r.fate is Fate.pending else []
        if len(paths) > 1:
            others = ", ".join(p for p in paths if p != r.path)
            r = r.settle(Fate.rejected, f"duplicate stem: {r.stem} is also {others}")
        out.append(r)
    return out


def _check_film(root: Path, film: SourceRecord, xml: SourceRecord | None) -> SourceRecord:
    problem, width, height = image_header_problem(root / film.path)
    film = replace(film, width=width, height=height)
    if problem:
        return film.settle(Fate.rejected, problem)
    if xml is None:
        return film.settle(Fate.rejected, "no annotation file for this image")
    film = replace(film, annotation=xml.path)
    if xml.fate is not Fate.pending:
        return film.settle(Fate.rejected, f"annotation rejected: {xml.path} ({xml.reason})")
    try:
        boxes = parse_voc(root / xml.path)
        if not named_original(film.folder, film.stem):
            return film  # augmented copies are dropped next; their boxes are never used
        return replace(film, lesions=to_lesions(boxes, width, height))
    except AnnotationError as error:
        return film.settle(Fate.rejected, f"bad annotation: {error} in {xml.path}")


def index_source(
    root: Path,
    on_total: Callable[[int], None] | None = None,
    on_file: Callable[[], None] | None = None,
) -> list[SourceRecord]:
    """Every file below ``root`` as a record; the bad ones already settled with a reason."""
    paths = sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink())
    if on_total:
        on_total(len(paths))
    records = []
    for path in paths:
        records.append(_classify(root, path))
        if on_file:
            on_file()
    records = _reject_duplicate_stems(records, Kind.image)
    records = _reject_duplicate_stems(records, Kind.annotation)
    xml_by_stem = {r.stem: r for r in records if r.kind is Kind.annotation}
    image_stems = {r.stem for r in records if r.kind is Kind.image}
    out = []
    for record in records:
        if record.fate is Fate.pending and record.kind is Kind.image:
            record = _check_film(root, record, xml_by_stem.get(record.stem))
        elif record.fate is Fate.pending and record.stem not in image_stems:
            record = record.settle(Fate.rejected, "annotation without an image")
        out.append(record)
    return out
