"""The index step: one record per source file, with the problems that settle its fate early.

Images are checked from their header (format, mode, size, EXIF orientation), then, once the
header check has cleared them, for content at libjpeg's smallest scale: a blank, near-black
or uniform film is rejected (``curation.index.content``). Their data is decoded at the hash's
scale, strictly, by the hash step. Annotations are Pascal VOC XML read with ``defusedxml``;
their ``<filename>`` only gives the patient number it may carry, held in memory and never
written anywhere. Boxes become fractions of the true image size, read
from the image and never from the XML. The limits (film size, boxes per film, duplicate
boxes) are constants below, listed in the README ("What it refuses and why").

What a file says about itself (``FileFacts``: digest, header, parsed boxes) is read once per
file in worker processes and remembered in a cache keyed by the file's path, size and
modification time, so a rerun over an unchanged source reads no file; only the decisions
that compare files (duplicate stems, image-annotation pairs) run every time.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import time
import warnings
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import pyarrow as pa
from PIL import Image, UnidentifiedImageError

if TYPE_CHECKING:
    pass

from curation.core.atomic import settled
from curation.core.cache import read_cache, write_cache
from curation.core.jpeg_check import check_decodable
from curation.core.parallel import LocalMap, Mapper
from curation.core.records import Fate, Kind, Lesion, SourceRecord
from curation.index.content import content_problem
from curation.index.originals import original_named, original_stems
from curation.index.provenance import UNREADABLE, encoder_signature
from curation.index.voc import GRADES, AnnotationError, RawBox, read_voc

IMAGE_SUFFIXES = {".jpg", ".jpeg"}
ANNOTATION_FOLDER = "image annots"
STEM_PATTERN = re.compile(r"[0-9]{5,6}")  # ASCII only: \d takes fullwidth digits too
ACCEPTED_MODES = {"L", "RGB"}
MAX_FILM_PIXELS = 40_000_000  # real films are ~3.3 MP; anything this large is a bomb
# The hash and the pixel check look at a film at 256 x 128; a smaller one is not a film.
MIN_FILM_WIDTH, MIN_FILM_HEIGHT = 256, 128
EXIF_ORIENTATION = 0x0112
FACTS_VERSION = "facts-v6"  # bump when what is read from one file changes
CHUNK = 64


@dataclass(frozen=True)
class FileFacts:
    """What one image or annotation file says about itself: a pure function of its bytes."""

    sha256: str
    size: int
    problem: str = ""  # image: why its header is unusable; annotation: why its XML is refused
    width: int = 0
    height: int = 0
    boxes: tuple[RawBox, ...] = ()
    encoder: str = ""  # image: its encoder signature (``curation.index.provenance``)
    patient_number: str | None = field(default=None, repr=False)  # never cached nor shown


def to_lesions(boxes: list[RawBox], width: int, height: int) -> tuple[Lesion, ...]:
    """Fractional boxes: reversed corners swapped, clipped to the frame; zero area refused,
    and so is a box drawn twice (whatever its grades: one lesion is not two)."""
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
    corners = [les.box for les in lesions]
    if len(set(corners)) < len(corners):
        raise AnnotationError(f"duplicate box: {len(corners) - len(set(corners))} drawn twice")
    return tuple(sorted(lesions, key=lambda les: (les.box, les.pai)))


def read_image_header(source: Path | BinaryIO) -> tuple[str, int, int, str]:
    """``(problem, width, height, encoder signature)``; the problem is empty for a usable
    JPEG film."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(source) as image:
                width, height = image.size
                problem = _header_problem(image, width, height)
                return problem, width, height, _signature(image)
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as error:
        return f"decompression bomb: {error}", 0, 0, UNREADABLE
    except UnidentifiedImageError:  # its message names the file object, not the file
        return "not a readable image: no image format recognised", 0, 0, UNREADABLE
    except Exception as error:  # Pillow raises many types for bad bytes; all mean "unreadable"
        return f"not a readable image: {type(error).__name__}: {error}", 0, 0, UNREADABLE


def _signature(image: Image.Image) -> str:
    try:
        return encoder_signature(image)
    except Exception:  # a header Pillow opened but cannot describe says nothing
        return UNREADABLE


def _header_problem(image: Image.Image, width: int, height: int) -> str:
    orientation = image.getexif().get(EXIF_ORIENTATION, 1) if image.format == "JPEG" else 1
    problems = (
        (image.format != "JPEG", f"not a JPEG: {image.format} data"),
        (width * height > MAX_FILM_PIXELS, f"decompression bomb: {width}x{height} px claimed"),
        (image.mode not in ACCEPTED_MODES, f"unsupported image mode: {image.mode}"),
        (
            width < MIN_FILM_WIDTH or height < MIN_FILM_HEIGHT,
            f"film too small: {width}x{height} px, under {MIN_FILM_WIDTH}x{MIN_FILM_HEIGHT}",
        ),
        (
            orientation != 1,
            f"EXIF orientation {orientation}: readers turn the film, its boxes are drawn on "
            "the stored frame",
        ),
    )
    return next((problem for found, problem in problems if found), "")


def _name_parts(rel: str) -> tuple[str, str, str]:
    """``(folder name, stem, lower-case suffix)`` of a posix path, without ``pathlib``'s cost
    (an index makes tens of thousands of these)."""
    folder, _, name = rel.rpartition("/")
    stem, suffix = os.path.splitext(name)
    return folder.rpartition("/")[2], stem, suffix.lower()


def file_kind(rel: str) -> Kind:
    """Images by suffix, annotations by suffix and folder; anything else is not data."""
    folder, _, suffix = _name_parts(rel)
    if suffix in IMAGE_SUFFIXES:
        return Kind.image
    if suffix == ".xml" and folder.lower() == ANNOTATION_FOLDER:
        return Kind.annotation
    return Kind.other


def file_facts(data: bytes, kind: Kind) -> FileFacts:
    """What an image (digest, header) or annotation (digest, boxes) file's bytes say. Bytes,
    not a path, so that any executor can read the file where it lives
    (``curation.chain.executors``)."""
    sha256, size = hashlib.sha256(data).hexdigest(), len(data)
    if kind is Kind.image:
        problem, width, height, encoder = read_image_header(io.BytesIO(data))
        problem = problem or check_decodable(data) or ""  # never decode what it refuses
        problem = problem or content_problem(data)  # blank, near-black, uniform
        return FileFacts(sha256, size, problem, width, height, encoder=encoder)
    try:
        voc = read_voc(io.BytesIO(data))
    except AnnotationError as error:
        return FileFacts(sha256, size, problem=str(error))
    return FileFacts(sha256, size, boxes=tuple(voc.boxes), patient_number=voc.patient_number)


def _facts_job(args: tuple[str, Kind]) -> FileFacts:
    path, kind = args
    return file_facts(Path(path).read_bytes(), kind)


"""Reads ``(absolute path, kind)`` jobs into their ``FileFacts``, in job order."""


StatKey = tuple[str, int, int]  # absolute path, size, modification time (ns)

_BOX = pa.struct(
    [(f, pa.float64()) for f in ("xmin", "ymin", "xmax", "ymax")] + [("grade", pa.string())]
)
_FACTS_SCHEMA = pa.schema(
    [
        ("path", pa.string()),
        ("size", pa.int64()),
        ("mtime_ns", pa.int64()),
        ("sha256", pa.string()),
        ("problem", pa.string()),
        ("width", pa.int64()),
        ("height", pa.int64()),
        ("boxes", pa.list_(_BOX)),
        ("encoder", pa.string()),
    ]
)


def read_facts_cache(path: Path | None) -> dict[StatKey, FileFacts]:
    """The facts of each file read before, by path, size and modification time; empty
    without a usable cache."""
    table = read_cache(path, FACTS_VERSION, _FACTS_SCHEMA)
    if table is None:
        return {}
    columns = {name: table.column(name).to_pylist() for name in table.column_names}
    return {
        (p, size, mtime): FileFacts(
            sha, size, problem, width, height, tuple(RawBox(**b) for b in boxes), encoder
        )
        for p, size, mtime, sha, problem, width, height, boxes, encoder in zip(
            *(columns[name] for name in _FACTS_SCHEMA.names), strict=True
        )
    }


def write_facts_cache(path: Path, facts: dict[StatKey, FileFacts]) -> None:
    """Facts carrying a patient number are never written: they are read again each run."""
    keys = sorted(k for k, f in facts.items() if f.patient_number is None)
    rows = [facts[k] for k in keys]
    columns = {
        "path": [k[0] for k in keys],
        "size": [f.size for f in rows],
        "mtime_ns": [k[2] for k in keys],
        "sha256": [f.sha256 for f in rows],
        "problem": [f.problem for f in rows],
        "width": [f.width for f in rows],
        "height": [f.height for f in rows],
        "boxes": [[box.__dict__ for box in f.boxes] for f in rows],
        "encoder": [f.encoder for f in rows],
    }
    write_cache(path, FACTS_VERSION, pa.table(columns, schema=_FACTS_SCHEMA))


def _record(rel: str, kind: Kind, facts: FileFacts | None) -> SourceRecord:
    folder, stem, suffix = _name_parts(rel)
    if facts is None:
        return SourceRecord(rel, kind, stem, folder=folder).settle(
            Fate.ignored, f"not part of the dataset: {suffix or 'no suffix'} file"
        )
    record = SourceRecord(
        rel,
        kind,
        stem,
        sha256=facts.sha256,
        size_bytes=facts.size,
        folder=folder,
        encoder=facts.encoder,
        patient_number=facts.patient_number,
    )
    if not STEM_PATTERN.fullmatch(stem):
        return record.settle(Fate.rejected, "file name is not a 5-6 digit numeric stem")
    return record


def source_files(root: Path) -> list[str]:
    """Every regular file below ``root`` (links are not followed), as sorted posix paths
    relative to ``root``; plain strings, since ``pathlib`` objects cost more than the walk
    itself over tens of thousands of files."""
    found = []
    for folder, _, names in os.walk(root):
        base = Path(folder).relative_to(root).as_posix()
        for name in names:
            full = os.path.join(folder, name)
            if not os.path.islink(full) and os.path.isfile(full):
                found.append(name if base == "." else f"{base}/{name}")
    return sorted(found)


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


def _check_film(
    film: SourceRecord,
    facts: FileFacts,
    xml: SourceRecord | None,
    xml_facts: FileFacts | None,
    originals: frozenset[str],
) -> SourceRecord:
    film = replace(film, width=facts.width, height=facts.height)
    if facts.problem:
        return film.settle(Fate.rejected, facts.problem)
    if xml is None or xml_facts is None:
        return film.settle(Fate.rejected, "no annotation file for this image")
    film = replace(film, annotation=xml.path, patient_number=xml_facts.patient_number)
    if xml.fate is not Fate.pending:
        return film.settle(Fate.rejected, f"annotation rejected: {xml.path} ({xml.reason})")
    if xml_facts.problem:
        return film.settle(Fate.rejected, f"bad annotation: {xml_facts.problem} in {xml.path}")
    if original_named(film.folder, film.stem, originals):
        return film  # copies of the source's films are dropped next; their boxes never used
    try:
        return replace(film, lesions=to_lesions(list(xml_facts.boxes), facts.width, facts.height))
    except AnnotationError as error:
        return film.settle(Fate.rejected, f"bad annotation: {error} in {xml.path}")


def read_facts(
    files: Mapping[str, Kind],
    cache_path: Path | None,
    map: Mapper,
    on_progress: Callable[[int], None] | None = None,
) -> dict[str, FileFacts]:
    """``file_facts`` of every file (absolute path -> kind), from the cache when its path, size
    and modification time are unchanged, else read by ``map``; the cache is rewritten for
    these files, except those modified just before the reading
    (``curation.core.atomic.settled``)."""
    started = time.time_ns()
    keys: dict[str, StatKey] = {}
    for path in files:
        stat = os.stat(path)
        keys[path] = (path, stat.st_size, stat.st_mtime_ns)
    cached = read_facts_cache(cache_path)
    facts = {key: cached[key] for key in keys.values() if key in cached}
    todo = [path for path, key in keys.items() if key not in facts]
    jobs = [(path, files[path]) for path in todo]
    found_facts = map(_facts_job, jobs, chunksize=CHUNK)
    for path, found in zip(todo, found_facts, strict=True):
        facts[keys[path]] = found
        if on_progress:
            on_progress(1)
    if on_progress:
        on_progress(len(files) - len(todo))
    remembered = {
        k: f for k, f in facts.items() if settled(k[2], started) and f.patient_number is None
    }
    if cache_path is not None and remembered.keys() != cached.keys():
        write_facts_cache(cache_path, remembered)
    return {path: facts[key] for path, key in keys.items()}


def index_source(
    root: Path,
    on_total: Callable[[int], None] | None = None,
    on_progress: Callable[[int], None] | None = None,
    *,
    cache_path: Path | None = None,
    map: Mapper | None = None,
) -> list[SourceRecord]:
    """Every file below ``root`` as a record; the bad ones already settled with a reason.

    Files are read by ``map`` (default: one process per core); with ``cache_path``, a file
    whose path, size and modification time are unchanged is not read again."""
    relative = source_files(root)
    if on_total:
        on_total(len(relative))
    kinds = {rel: file_kind(rel) for rel in relative}
    base = os.path.abspath(root)
    data = {f"{base}/{rel}": kind for rel, kind in kinds.items() if kind is not Kind.other}
    if on_progress:
        on_progress(len(relative) - len(data))
    facts_of = read_facts(data, cache_path, map or LocalMap(), on_progress)
    facts_by_path = {
        rel: facts_of[f"{base}/{rel}"] for rel in relative if kinds[rel] is not Kind.other
    }
    records = [_record(rel, kinds[rel], facts_by_path.get(rel)) for rel in relative]
    records = _reject_duplicate_stems(records, Kind.image)
    records = _reject_duplicate_stems(records, Kind.annotation)
    xml_by_stem = {r.stem: r for r in records if r.kind is Kind.annotation}
    image_stems = {r.stem for r in records if r.kind is Kind.image}
    originals = original_stems(records)
    out = []
    for record in records:
        if record.fate is Fate.pending and record.kind is Kind.image:
            xml = xml_by_stem.get(record.stem)
            xml_facts = facts_by_path.get(xml.path) if xml else None
            record = _check_film(record, facts_by_path[record.path], xml, xml_facts, originals)
        elif record.fate is Fate.pending and record.stem not in image_stems:
            record = record.settle(Fate.rejected, "annotation without an image")
        out.append(record)
    return out
