"""The facts the keeper rules read (``curation.keeper.rules``), gathered for the films of
same-picture groups only, at little cost:

- which way is up comes from the hashes every film already has: each film's 512 hash bits
  in the identity, quarter and half turns are correlated with the mean of the archive's
  identity bits (its films are upright, bar a few copies); a film is turned when a turn
  fits better than its own frame by ``TURN_MARGIN``. On 120 real films
  (``python -m bench.keeper.altered``, the mean of the originals plus one copy each) their own
  frame fit better than any quarter turn by at least 0.271 and than the half turn by at
  least 0.424 (correlation), so a turned copy fits its turn back better by as much; the
  limit is half the smaller, 0.135, which also leaves films that tell nothing (a symmetric
  picture) upright. Mirrors: no separation (the smallest margin is -0.012: some films fit
  their mirror better), so no mirror fact;
- each side's constant border (read again on a full decode for the pairs whose pad the
  draft leaves near its limit: ``curation.keeper.frame.near_pad``), the black share of
  the corner blocks inside it, and whether a colour file holds a grey picture (three
  equal channels), from one reduced-scale (draft) decode, the scale the hash step decodes
  at (``curation.keeper.frame``; the pad and the colour re-save are judged against the
  pair and the archive by the rules). Real films' least black corner
  (``bench.keeper.bordered``, both halves, 512 px and native size, bordered or not): 0.0; a
  copy turned by 1 degree, at least 0.091: limit 0.045;
- whether the larger film of a whole-frame pair of two sizes is an upscale of the smaller
  (``curation.keeper.frame.upscale_of``: a full decode of both and the larger film's
  quantisation table, for those pairs only);
- the JPEG quality from the quantisation tables in the header (Pillow parses them on open);
- the archive's usual encoder: the signature (``curation.index.provenance``, read by the index)
  that more than half of the films in play carry, if one does;
- an augmentation-folder twin from the index's sha256 (byte-identical), or by the pixel
  check against the mirrored and turned copies (digits 4 and 5) that the augmentation
  folder holds of another film of the group. Noise and scaling copies (2, 3) count only
  byte for byte: every upright relative of a film is the same picture as those;
- the tone departures (local contrast, histogram roughness) against the archive's typical
  film, measured on a bounded reference sample (``curation.keeper.tone``): one
  full-size decode per film and per reference film, only for the groups in which two films
  tie on every rule before the tone rules (``keeper.tied``): elsewhere a tone departure
  could decide nothing. (Every film of such a group is measured, since the tone rules read
  the whole group.)
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from itertools import islice
from pathlib import Path
from typing import TypeVar

import cv2
import networkx as nx
import numpy as np
from PIL import Image

from curation.core.parallel import LocalMap, Mapper
from curation.core.records import Fate, Kind, SourceRecord
from curation.hashes.hash_films import Hashes
from curation.hashes.hashing import DRAFT_REQUEST, AverageHash512, View, hamming
from curation.index.originals import AUGMENTATION_KINDS, ORIGINALS_FOLDER
from curation.index.provenance import EncoderEvidence
from curation.keeper.frame import (
    Borders,
    border_shares,
    corner_share,
    full_size_borders,
    grey_in_colour,
    is_upscale,
)
from curation.keeper.rules import (
    FIRST_TONE_RULE,
    FilmFacts,
    borders_to_reread,
    one_content,
    tied,
)
from curation.keeper.tone import REFERENCE_FILMS, TypicalTone, tone_of
from curation.same_picture import pixels

TURN_MARGIN = 0.135  # correlation with the mean grid, turned minus own frame (see above)
COLOUR_MODES = ("RGB", "RGBA", "CMYK", "YCbCr", "P")  # decoded in colour: are its channels equal?
TWIN_DIGITS = ("4", "5")  # mirrored and turned augmentation copies: compared in pixels
MEAN_GRID_FILMS = 512  # films whose hash bits are counted at once (300 KB of buffers)
_TURNS = (View.identity, View.rot90, View.rot180, View.rot270)
# The IJG standard luminance table (JPEG Annex K), from which libjpeg scales by quality.
_IJG_LUMA = (
    *(16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55, 14, 13, 16, 24, 40, 57),
    *(69, 56, 14, 17, 22, 29, 51, 87, 80, 62, 18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55),
    *(64, 81, 104, 113, 92, 49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100),
    *(103, 99),
)


def hash_bits(code: bytes) -> np.ndarray:
    """A hash's bits as 0.0 and 1.0, for correlating with the archive's mean grid."""
    return np.unpackbits(np.frombuffer(code, dtype=np.uint8)).astype(np.float64)


def correlation(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson's correlation of two grids; 0 when either is flat."""
    a, b = a - a.mean(), b - b.mean()
    norm = float(np.sqrt((a * a).sum() * (b * b).sum()))
    return float((a * b).sum()) / norm if norm else 0.0


def mean_grid(hashes: Mapping[str, Mapping[View, bytes]]) -> np.ndarray:
    """The archive's mean film: the share of films with each identity hash bit set.

    The bits are counted ``MEAN_GRID_FILMS`` films at a time: a row of float bits per film
    (4 KB each, twice over when stacked) made this the keeper step's peak in the driver, 8 KB
    a hashed film. Counts of 0s and 1s are exact in any order, so the share is the
    same to the bit."""
    if not hashes:
        return np.zeros(512)
    columns = hashes if isinstance(hashes, Hashes) else Hashes.from_views(hashes)
    counts = np.zeros(512, dtype=np.int64)
    films = iter(columns)
    while chunk := list(islice(films, MEAN_GRID_FILMS)):
        codes = columns.codes(View.identity, chunk)
        counts += np.unpackbits(codes, axis=1).sum(axis=0, dtype=np.int64)
    mean: np.ndarray = counts / len(columns)
    return mean


def turn_of(views: dict[View, bytes], mean: np.ndarray) -> View:
    """The turn whose hash fits the mean film best, when it beats the film's own frame by
    ``TURN_MARGIN``; else identity (upright, or nothing tells)."""
    fits = {view: correlation(hash_bits(views[view]), mean) for view in _TURNS}
    best = max(_TURNS, key=lambda v: fits[v])
    return best if fits[best] - fits[View.identity] >= TURN_MARGIN else View.identity


def jpeg_quality(image: Image.Image) -> int:
    """The IJG quality (1-100) whose scaling of the standard table gives the film's
    luminance table the same sum; 0 for a file without tables."""
    tables = getattr(image, "quantization", None)
    if not tables:
        return 0
    scale = 100 * sum(tables[min(tables)]) / sum(_IJG_LUMA)
    quality = (200 - scale) / 2 if scale <= 100 else 5000 / scale
    return int(min(max(round(quality), 1), 100))


def draft_grey(path: Path) -> np.ndarray:
    """The film in grey at the hash step's reduced (draft) scale."""
    with Image.open(path) as image:
        image.draft("L", DRAFT_REQUEST)
        return np.asarray(image.convert("L"))


@dataclass(frozen=True)
class FileFacts:
    """What one film's header and draft decode say (``curation.keeper.frame``);
    all empty, saying nothing, for a film that no longer reads."""

    quality: int = 0
    borders: Borders = (0.0, 0.0, 0.0, 0.0)
    corners: float = 0.0
    grey_in_colour: bool = False  # a grey picture stored in three channels


def header_and_border(path: Path) -> FileFacts:
    """A film's JPEG quality (header), constant borders, filled corners and whether it stores
    a grey picture in colour (one draft decode)."""
    try:
        with Image.open(path) as image:
            quality = jpeg_quality(image)
            mode = "RGB" if image.mode in COLOUR_MODES else "L"
            image.draft(mode, DRAFT_REQUEST)
            picture = np.asarray(image.convert(mode))
    except (OSError, ValueError, Image.DecompressionBombError):
        return FileFacts()
    grey = picture if picture.ndim == 2 else cv2.cvtColor(picture, cv2.COLOR_RGB2GRAY)
    return FileFacts(quality, border_shares(grey), corner_share(grey), grey_in_colour(picture))


def _augmented(records: Iterable[SourceRecord]) -> Iterator[SourceRecord]:
    return (
        r
        for r in records
        if r.kind is Kind.image
        and r.fate is not Fate.rejected
        and r.folder.lower() != ORIGINALS_FOLDER
    )


@dataclass(frozen=True)
class UprightJob:
    """Is the film at ``path`` (identity hash ``view``) the same picture, upright, as the
    augmentation-folder film at ``twin_path``? Sizes are the two films' (width, height)."""

    path: str
    twin_path: str
    view: bytes
    sizes: tuple[tuple[int, int], tuple[int, int]]
    radius: int


def same_upright(job: UprightJob) -> bool:
    """Worker side: the twin's hash within ``radius`` of the film's, then the pixel check."""
    try:
        twin_hash = AverageHash512().hash_views(Path(job.twin_path))[View.identity]
    except (OSError, ValueError):  # an unreadable copy says nothing
        return False
    if hamming(job.view, twin_hash) > job.radius:
        return False
    compared = pixels.compare(Path(job.path), Path(job.twin_path), View.identity, job.sizes)
    return compared.same_picture


def augmented_twins(
    root: Path,
    records: list[SourceRecord],
    groups: list[set[str]],
    hashes: Hashes,
    radius: int,
    map: Mapper,
) -> dict[str, str]:
    """Film -> how it equals an augmentation-folder copy made from another film (see above).
    Every candidate twin is checked through ``map``; a film takes its first twin, in the
    order of its group's other films and ``TWIN_DIGITS``."""
    grouped: set[str] = set().union(*groups)
    films = {
        r.film_id: r
        for r in records
        if r.film_id in grouped and r.kind is Kind.image and r.fate is Fate.pending
    }
    # Only the copies a grouped film can match are looked up, not every augmented file.
    shas = {films[f].sha256 for f in grouped}
    stems = {f[:-1] + digit for f in grouped for digit in TWIN_DIGITS}
    by_sha: dict[str, list[str]] = {}
    by_stem: dict[str, SourceRecord] = {}
    for r in _augmented(records):
        if r.sha256 in shas:
            by_sha.setdefault(r.sha256, []).append(r.stem)
        if r.stem in stems:
            by_stem[r.stem] = r
    twins = {}
    candidates: list[tuple[str, str, str, SourceRecord]] = []  # film, other, digit, twin
    for group in groups:
        for film in sorted(group):
            own = film[:-1]
            same_bytes = sorted(s for s in by_sha.get(films[film].sha256, []) if s[:-1] != own)
            if same_bytes:
                twins[film] = f"byte-identical to {same_bytes[0]} of the augmentation folder"
                continue
            for other in sorted(group - {film}):
                for digit in TWIN_DIGITS:
                    twin = by_stem.get(other[:-1] + digit)
                    if twin is not None and twin.stem[:-1] != own:
                        candidates.append((film, other, digit, twin))
    jobs = [
        UprightJob(
            str(root / films[film].path),
            str(root / twin.path),
            hashes[film][View.identity],
            ((films[film].width, films[film].height), (twin.width, twin.height)),
            radius,
        )
        for film, _, _, twin in candidates
    ]
    for (film, other, digit, twin), same in zip(candidates, map(same_upright, jobs), strict=True):
        if same and film not in twins:
            kind = AUGMENTATION_KINDS[digit]
            twins[film] = (
                f"the same picture as {twin.stem} of the augmentation folder "
                f"(its {kind} copy of {other})"
            )
    return twins


def usual_encoder(records: Iterable[SourceRecord]) -> str:
    """The signature more than half of the films in play carry; "" when none does."""
    films = Counter(r.encoder for r in records if r.kind is Kind.image and r.fate is Fate.pending)
    if not films:
        return ""
    signature, count = max(films.items(), key=lambda item: (item[1], item[0]))
    return signature if 2 * count > films.total() else ""


def keeper_facts(
    root: Path,
    records: list[SourceRecord],
    hashes: Hashes,
    pairs: Iterable[tuple[str, str]],
    encoders: EncoderEvidence,
    radius: int,
    map: Mapper | None = None,
    rescaled: Iterable[tuple[str, str]] = (),
) -> dict[str, FilmFacts]:
    """The facts of every film of the confirmed ``pairs`` (film ids), for the keeper; the
    films' headers and draft decodes are read through ``map``. ``rescaled`` holds the
    whole-frame pairs (larger, smaller) of one picture at two sizes: whether the larger is
    an upscale is read for those only (a full decode of both)."""
    graph = nx.Graph(list(pairs))
    groups = [set(c) for c in nx.connected_components(graph)]
    films = {r.film_id: r for r in records if r.kind is Kind.image and r.film_id in graph}
    mean = mean_grid(hashes)
    usual = usual_encoder(records)
    stored_grey = usual.startswith("L|")
    map = map or LocalMap(1)
    twins = augmented_twins(root, records, groups, hashes, radius, map)
    upscales = upscaled_films(root, films, list(rescaled), map)
    ids = sorted(films)
    read = _per_content(header_and_border, root, [films[f] for f in ids], map)
    facts = {}
    for film, file in zip(ids, read, strict=True):
        record = films[film]
        facts[film] = FilmFacts(
            record.width,
            record.height,
            record.lesions,
            encoders.script_share(record.encoder),
            augmented_twin=twins.get(film, ""),
            turned=turn_of(hashes[film], mean),
            borders=file.borders,
            upscaled_from=upscales.get(film, ""),
            grey_in_colour=stored_grey and file.grey_in_colour,
            quality=file.quality,
            unusual_encoder=bool(usual) and record.encoder != usual,
            filled_corners=file.corners,
            content=record.sha256,
        )
    near = sorted(f for g in groups for f in borders_to_reread(g, facts))
    for film, borders in zip(
        near, _per_content(full_size_borders, root, [films[f] for f in near], map), strict=True
    ):
        facts[film] = replace(facts[film], borders=borders)
    toned = sorted(f for g in groups if _tone_can_decide(g, facts) for f in g)
    if not toned:  # every group is decided by the file's own facts: no full-size decode
        return facts
    reference = tone_reference(records)
    tones = _per_content(tone_of, root, reference + [films[f] for f in toned], map)
    typical = TypicalTone.of(tones[: len(reference)])
    for film, tone in zip(toned, tones[len(reference) :], strict=True):
        contrast, rough = typical.departures(tone)
        facts[film] = replace(facts[film], contrast_departure=contrast, roughness_departure=rough)
    return facts


def upscaled_films(
    root: Path, films: dict[str, SourceRecord], rescaled: list[tuple[str, str]], map: Mapper
) -> dict[str, str]:
    """Larger film -> the smaller film it is an upscale of, among the ``rescaled`` pairs
    (larger, smaller), read through ``map`` (``curation.keeper.frame``), one pair a task: a
    pair costs two full decodes, and a few pairs of archive-sized films outweigh the rest, so
    chunks of many pairs left one worker waiting on the other's."""
    jobs = [(str(root / films[a].path), str(root / films[b].path)) for a, b in rescaled]
    found = {}
    readings = map(is_upscale, jobs, chunksize=1)
    for (larger, smaller), upscale in zip(rescaled, readings, strict=True):
        if upscale and larger not in found:
            found[larger] = smaller
    return found


def _tone_can_decide(group: set[str], facts: dict[str, FilmFacts]) -> bool:
    """Whether the tone rules can separate the films the file's own facts leave tied: more
    than one of them, of more than one content (a film filed twice measures alike)."""
    even = tied(group, facts, FIRST_TONE_RULE)
    return len(even) > 1 and not one_content(even, facts)


Measured = TypeVar("Measured")


def _per_content(
    measure: Callable[[Path], Measured], root: Path, films: list[SourceRecord], map: Mapper
) -> list[Measured]:
    """``measure`` of each film's file, in ``films`` order, read once per content (sha256)
    through ``map``: a film filed twice is one file to measure."""
    first = {_content(r): r for r in reversed(films)}  # the first film of each content
    contents = sorted(first)
    found = dict(zip(contents, map(measure, [root / first[c].path for c in contents]), strict=True))
    return [found[_content(r)] for r in films]


def _content(record: SourceRecord) -> str:
    return record.sha256 or f"path:{record.path}"  # a record not yet read is its own content


def tone_reference(records: Iterable[SourceRecord]) -> list[SourceRecord]:
    """The films the archive's typical tone is measured on: the first ``REFERENCE_FILMS``
    films in play by sha256 (spread over the archive, the same on every run); picked without
    a sorted copy of every film."""
    films = (r for r in records if r.kind is Kind.image and r.fate is Fate.pending)
    return heapq.nsmallest(REFERENCE_FILMS, films, key=lambda r: (r.sha256, r.path))
