"""The index step: one record per source file, with the problems that settle its fate early.

Images are checked from their header (format, mode, size, EXIF orientation, what libjpeg
must never be handed) and not decoded: the hash step decodes them, strictly, and rejects there
a film that does not decode or shows no content (``curation.hashes.content``). Annotations are
Pascal VOC XML read with ``defusedxml``; their ``<filename>`` only gives the patient number it
may carry, held in memory and never written anywhere. Boxes become fractions of the true image
size, read from the image and never from the XML. The limits (film size, boxes per film, duplicate
boxes) are constants below, listed in the README ("What it refuses and why").

What a file says about itself (``FileFacts``: digest, header, parsed boxes) is read once per
file in worker processes and remembered in a cache keyed by the file's path, size and
modification time (``curation.index.facts``), so a rerun over an unchanged source reads no
file; only the decisions that compare files (duplicate stems, image-annotation pairs) run
every time.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import time
import warnings
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import BinaryIO, cast

import numpy as np
from PIL import Image, UnidentifiedImageError

from curation.core.atomic import settled
from curation.core.jpeg_check import check_decodable
from curation.core.parallel import LocalMap, Mapper
from curation.core.records import Fate, Kind, Lesion, SourceRecord
from curation.index.facts import FileFacts, Listing, read_facts_cache, write_facts_cache
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
CHUNK = 64


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
        problem = problem or check_decodable(data) or ""  # never handed to a decoder later
        return FileFacts(sha256, size, problem, width, height, encoder=encoder)
    try:
        voc = read_voc(io.BytesIO(data))
    except AnnotationError as error:
        return FileFacts(sha256, size, problem=str(error))
    return FileFacts(sha256, size, boxes=tuple(voc.boxes), patient_number=voc.patient_number)


def _facts_job(job: tuple[str, str, Kind]) -> FileFacts:
    """The facts of a ``(folder, posix path below it, kind)`` job's file. The folder and the path
    apart: the driver holds every job while the workers read, and these are strings it holds
    already, where a whole path would be a new one a file."""
    root, rel, kind = job
    return file_facts(Path(f"{root}/{rel}").read_bytes(), kind)


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


def _reject_duplicate_stems(records: list[SourceRecord], kind: Kind) -> None:
    """Two files of one kind under one stem cannot be told apart: both are rejected. In place,
    and the paths listed for shared stems only: the driver holds the records of a whole
    archive, never a second list of them."""
    stems = Counter(r.stem for r in records if r.kind is kind and r.fate is Fate.pending)
    by_stem: dict[str, list[str]] = defaultdict(list)
    for r in records:
        if r.kind is kind and r.fate is Fate.pending and stems[r.stem] > 1:
            by_stem[r.stem].append(r.path)
    for at, r in enumerate(records):
        paths = by_stem.get(r.stem, []) if r.kind is kind and r.fate is Fate.pending else []
        if len(paths) > 1:
            others = ", ".join(p for p in paths if p != r.path)
            records[at] = r.settle(Fate.rejected, f"duplicate stem: {r.stem} is also {others}")


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
    root: str,
    files: Sequence[str],
    kinds: Sequence[Kind],
    cache_path: Path | None,
    map: Mapper,
    on_progress: Callable[[int], None] | None = None,
) -> list[FileFacts]:
    """``file_facts`` of each of ``files`` (posix paths below the absolute folder ``root``, of
    ``kinds``), in order: from the cache when its path, size and modification time are
    unchanged, else read by ``map``. The cache is rewritten for these files, except those
    modified just before the reading (``curation.core.atomic.settled``)."""
    started = time.time_ns()
    listing = Listing.stat(root, files)
    found, cached_files = read_facts_cache(cache_path, listing)
    todo = np.flatnonzero([known is None for known in found])
    jobs = [(root, files[at], kinds[at]) for at in todo.tolist()]
    for at, read in zip(
        (int(at) for at in todo), map(_facts_job, jobs, chunksize=CHUNK), strict=True
    ):
        found[at] = read
        if on_progress:
            on_progress(1)
    del jobs  # the mapper has let go of them too
    if on_progress:
        on_progress(len(files) - len(todo))
    facts = cast(list[FileFacts], found)  # every file's, cached or read
    remembered = np.flatnonzero(
        [
            settled(int(listing.mtimes_ns[at]), started) and f.patient_number is None
            for at, f in enumerate(facts)
        ]
    )
    unchanged = len(remembered) == cached_files and not np.isin(remembered, todo).any()
    if cache_path is not None and not unchanged:
        write_facts_cache(cache_path, listing, facts, remembered)
    return facts


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
    kinds = [file_kind(rel) for rel in relative]
    data = [at for at, kind in enumerate(kinds) if kind is not Kind.other]
    if on_progress:
        on_progress(len(relative) - len(data))
    read = read_facts(
        os.path.abspath(root),
        [relative[at] for at in data],
        [kinds[at] for at in data],
        cache_path,
        map or LocalMap(),
        on_progress,
    )
    facts: list[FileFacts | None] = [None] * len(relative)
    for at, found in zip(data, read, strict=True):
        facts[at] = found
    records = [
        _record(rel, kind, found) for rel, kind, found in zip(relative, kinds, facts, strict=True)
    ]
    del data, read, relative, kinds  # the records and their facts are all the checks need
    _reject_duplicate_stems(records, Kind.image)
    _reject_duplicate_stems(records, Kind.annotation)
    xml_at = {r.stem: at for at, r in enumerate(records) if r.kind is Kind.annotation}
    image_stems = {r.stem for r in records if r.kind is Kind.image}
    originals = original_stems(records)
    for at, record in enumerate(records):
        if record.fate is Fate.pending and record.kind is Kind.image:
            xml_index = xml_at.get(record.stem)
            xml = records[xml_index] if xml_index is not None else None
            xml_facts = facts[xml_index] if xml_index is not None else None
            film_facts = cast(FileFacts, facts[at])  # every image's facts are read
            records[at] = _check_film(record, film_facts, xml, xml_facts, originals)
            # One pending film a stem: its facts and its annotation's serve no other check.
            facts[at] = None
            if xml_index is not None:
                facts[xml_index] = None
        elif record.fate is Fate.pending and record.stem not in image_stems:
            records[at] = record.settle(Fate.rejected, "annotation without an image")
    return records
