"""``python -m bench.keeper.bordered``: which film is kept, on real films with their own borders.

Reads the real radiographs of ``../shared/realfilms-dev`` (the 120 films at 512 x 512 and the
25 grey films at their native 2,943 x 1,435; never copied into the repository) and skips with
one sentence when they are absent. Each original is measured twice: as it is, and with a
constant dark border of its own (``BORDER_SHARES``, level ``BORDER_LEVELS``, painted over
its edge and written at the film's own quality and mode), as held-out archives' films have.
From each it makes every alteration of ``bench.same_picture.alterations`` (15 alterations at their
strengths) and the further cases of ``EXTRA`` (60 % crops, 256-px downscales, a grey film
re-saved as RGB 4:4:4 at quality 95, 1.15 upscales), writes each copy in the original's mode
(the grey<->RGB alteration in the other one), numbers it once below and once above its
original, and lets ``curation.keeper.groups.same_picture_groups`` choose the
keeper from the facts the step reads (a turn against the archive's mean film, made of the
originals and one copy each). Detection is not measured here.

Films are split into two halves by their place in the folder (even: the half the new limits
are chosen on; odd: the other half); every figure is reported per half, with the margins of
``curation.keeper.frame``'s limits (largest value on one side, smallest on
the other). Figures go to ``bench/keeper/keeper.json`` under ``real_films_bordered``.

    uv run --frozen python -m bench.keeper.bordered                     # every film
    uv run --frozen python -m bench.keeper.bordered --films 20 --native 4   # a quick look
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from PIL import Image

from bench.common.real_films import REAL_FILMS, absent
from bench.keeper.altered import BORDERED_KEY, RESULTS
from bench.keeper.bordered_films import FULL_CHROMA, NATIVE_FILMS, Film, Source, make_films
from curation.core.atomic import write_bytes
from curation.hashes.hashing import AverageHash512, View
from curation.index.provenance import encoder_signature
from curation.keeper.evidence import (
    draft_grey,
    header_and_border,
    mean_grid,
    turn_of,
)
from curation.keeper.frame import (
    Frame,
    channel_spread,
    content_ratio,
    corner_share,
    full_size_borders,
    pad_share,
    resampling_of,
)
from curation.keeper.groups import pairs_to_reencode, same_picture_groups
from curation.keeper.reencode import ReencodeJob, reencoding_misses, written_from
from curation.keeper.rules import FIRST_TONE_RULE, FilmFacts, borders_to_reread, tied
from curation.keeper.tone import TypicalTone, tone_of
from curation.same_picture.candidates import SamePicture
from curation.same_picture.pixels import Comparison

CHUNK = 2  # films at 512 px per worker job (a native film is a job of its own)
WORKERS = 8  # processes: the measurement is independent per film once the archive is read
VIEWS = {"mirror": View.mirror, "quarter turn": View.rot90, "half turn": View.rot180}
REFRAMED = {"crop", "black pad", "rotation", "crop + re-encode", "width-only resize"}
REFRAMED |= {"burned-in label", "crop to 60%"}  # the frame check confirms these, not the grid
TURNED = {"quarter turn", "half turn"}


@dataclass(frozen=True)
class ArchiveStats:
    """What the rules read of the whole archive: its mean hash grid, its usual encoder and
    its typical tone, from the originals and one copy of each (copies are a minority)."""

    mean: np.ndarray
    usual: str
    typical: TypicalTone

    @classmethod
    def of(cls, sources: list[Source]) -> ArchiveStats:
        hasher = AverageHash512()
        with tempfile.TemporaryDirectory(prefix="bench-keeper-real-") as temp:
            made = make_films(sources, Path(temp), one_case_each=True)
            archive = [p for f in made for p in (f.original, *f.copies.values())]
            mean = mean_grid({str(p): hasher.hash_views(p) for p in archive})
            usual = Counter(_signature(p) for p in archive).most_common(1)[0][0]
            sample = archive[:: max(1, len(archive) // 60)]
            return cls(mean, usual, TypicalTone.of([tone_of(p) for p in sample]))


class Reader:
    """The facts of each written film, read once; tone only when asked."""

    def __init__(self, archive: ArchiveStats) -> None:
        self.hasher = AverageHash512()
        self.mean, self.usual, self.typical = archive.mean, archive.usual, archive.typical
        self.facts: dict[Path, FilmFacts] = {}

    def facts_of(self, path: Path) -> FilmFacts:
        if path not in self.facts:
            with Image.open(path) as image:
                width, height = image.size
            file = header_and_border(path)
            self.facts[path] = FilmFacts(
                width,
                height,
                (),
                0.0,
                turned=turn_of(self.hasher.hash_views(path), self.mean),
                borders=file.borders,
                grey_in_colour=self.usual.startswith("L|") and file.grey_in_colour,
                quality=file.quality,
                unusual_encoder=_signature(path) != self.usual,
                filled_corners=file.corners,
            )
        return self.facts[path]

    def toned(self, path: Path) -> FilmFacts:
        fact = self.facts_of(path)
        if fact.contrast_departure or fact.roughness_departure:
            return fact
        contrast, rough = self.typical.departures(tone_of(path))
        self.facts[path] = replace(fact, contrast_departure=contrast, roughness_departure=rough)
        return self.facts[path]


def _signature(path: Path) -> str:
    with Image.open(path) as image:
        return encoder_signature(image)


@dataclass
class Tally:
    """Outcomes and margins, per half."""

    kept: Counter = field(default_factory=Counter)
    rules: Counter = field(default_factory=Counter)
    turned_kept: Counter = field(default_factory=Counter)
    sides: dict[tuple[str, str], list[float]] = field(default_factory=dict)


_SMALLER = ("downscales", "crops and other reframed copies")
_UPSCALE_SIDES = {
    "upscale 1.15": "upscale copies",
    "upscale 1.15 Lanczos q90": "upscale copies",
    "crop": "originals over crops of 1-6 %",
    "downscale x0.87 q95": "originals over downscales at a higher quality",
    "width-only resize": "originals over width-only resizes",
}


def _tones(toned: FilmFacts, fact: FilmFacts) -> FilmFacts:
    return replace(
        fact,
        contrast_departure=toned.contrast_departure,
        roughness_departure=toned.roughness_departure,
    )


def _margin(tally: Tally, film: Film, name: str, value: float) -> None:
    tally.sides.setdefault((film.half, name), []).append(value)


def _upscale_reading(
    film: Film, case: str, copy: Path, facts: tuple[FilmFacts, FilmFacts], tally: Tally
) -> tuple[FilmFacts, FilmFacts]:
    """The facts of (original, copy) with the upscale read, as the step reads it for a pair
    of two sizes (here for every such pair but the turned ones: crops too, which is
    stricter), and its lead and fit recorded."""
    original_fact, copy_fact = facts
    if case in VIEWS or original_fact.width == copy_fact.width:
        return facts
    upscale = copy_fact.width > original_fact.width
    larger, smaller = (copy, film.original) if upscale else (film.original, copy)
    reading = resampling_of(larger, smaller)
    assert reading is not None, f"{larger} or {smaller} no longer reads"
    side = _UPSCALE_SIDES.get(case, "other larger copies (pads)" if upscale else "")
    side = side or f"originals over {_SMALLER[case in REFRAMED]}"
    _margin(tally, film, f"upscale beyond share: {side}", reading.beyond)
    _margin(tally, film, f"upscale lead: {side}", reading.lead)
    _margin(tally, film, f"upscale fit: {side}", reading.fit)
    _margin(tally, film, f"upscale stretch: {side}", reading.stretch)
    if reading.upscale != case.startswith("upscale 1.15"):
        _margin(tally, film, "upscale read wrongly (count)", 1.0)
    if reading.upscale and upscale:
        return original_fact, replace(copy_fact, upscaled_from="original")
    if reading.upscale:
        return replace(original_fact, upscaled_from="copy"), copy_fact
    return facts


def _full_size_borders(
    film: Film, copy: Path, facts: tuple[FilmFacts, FilmFacts], tally: Tally
) -> tuple[FilmFacts, FilmFacts]:
    """The facts of (original, copy) with both borders read at full size where the draft
    leaves the pad near its limit, as the step reads them (``borders_to_reread``)."""
    pair = {"original": facts[0], "copy": facts[1]}
    if not borders_to_reread(set(pair), pair):
        return facts
    _margin(tally, film, "pads read again at full size (count)", 1.0)
    original, copied = facts
    return (
        replace(original, borders=full_size_borders(film.original)),
        replace(copied, borders=full_size_borders(copy)),
    )


def _frame_margins(
    film: Film, name: str, copy: Path, facts: tuple[FilmFacts, FilmFacts], tally: Tally
) -> None:
    """The pad, content, corner and colour facts of the pair, unthresholded."""
    case = name.rsplit(" ", 1)[0]
    original, copied = (Frame(f.width, f.height, f.borders) for f in facts)
    if case == "black pad":
        _margin(tally, film, "pad: pad copies", pad_share(copied, original, 0.0))
        _margin(
            tally,
            film,
            "content ratio: pad copies over their originals",
            content_ratio(copied, original),
        )
    else:
        _margin(
            tally,
            film,
            "pad: originals read against their copies",
            pad_share(original, copied, 0.0),
        )
    if case in ("crop", "crop + re-encode") and name[-1] in "23":  # past the border
        _margin(
            tally,
            film,
            "content ratio: originals over crops of 3-6 %",
            content_ratio(original, copied),
        )
    if case == "rotation":
        _margin(tally, film, "corners: rotated copies", corner_share(draft_grey(copy), 0.0))
        if film.bordered:
            corners = corner_share(draft_grey(film.original), 0.0)
            _margin(tally, film, "corners: bordered originals", corners)
    if case == FULL_CHROMA:
        spread = channel_spread(np.asarray(Image.open(copy).convert("RGB")))
        _margin(tally, film, "channel spread: RGB re-saves", spread)


def _decide(film: Film, name: str, copy: Path, reader: Reader, tally: Tally) -> None:
    """The keeper of the original and one copy, numbered once above and once below it."""
    case = name.rsplit(" ", 1)[0]
    facts_read = reader.facts_of(film.original), reader.facts_of(copy)
    facts_read = _full_size_borders(film, copy, facts_read, tally)
    original_fact, copy_fact = _upscale_reading(film, case, copy, facts_read, tally)
    _frame_margins(film, name, copy, (original_fact, copy_fact), tally)
    original_id = "36531"
    for copy_id in ("090131", "16531"):  # above it as a number (below as text), and below
        facts = {original_id: original_fact, copy_id: copy_fact}
        pair = SamePicture(
            original_id,
            copy_id,
            VIEWS.get(case, View.identity),
            0,
            Comparison(0, None, True),
            ("copy", "copy") if case in REFRAMED else (),
        )
        group = {original_id, copy_id}
        if len(tied(group, facts, FIRST_TONE_RULE)) > 1:
            facts = {
                original_id: _tones(reader.toned(film.original), original_fact),
                copy_id: _tones(reader.toned(copy), copy_fact),
            }
        reencoded = {}
        if pairs_to_reencode([pair], facts):
            misses = reencoding_misses(ReencodeJob(str(film.original), str(copy), pair.view))
            found = written_from(original_id, copy_id, misses)
            reencoded = dict([found]) if found else {}
        [decided] = same_picture_groups([pair], facts, {}, reencoded)
        kept_original = decided.kept == original_id
        key = (film.half, f"{film.archive} | {'bordered' if film.bordered else 'plain'}", name)
        tally.kept[(*key, "original kept" if kept_original else "copy kept")] += 1
        rule = decided.dropped[0].evidence.split(":")[0]
        tally.rules[(film.half, rule if kept_original else f"copy kept | {rule}")] += 1
        if not kept_original and case in TURNED:
            tally.turned_kept[film.half] += 1


def _spread(values: list[float]) -> dict[str, float]:
    return {"n": len(values), "smallest": round(min(values), 4), "largest": round(max(values), 4)}


def _measure_chunk(job: tuple[list[Source], ArchiveStats]) -> Tally:
    """Every copy of a few films of one archive, decided (worker side)."""
    sources, archive = job
    tally = Tally()
    with tempfile.TemporaryDirectory(prefix="bench-keeper-real-") as temp:
        reader = Reader(archive)
        for film in make_films(sources, Path(temp)):
            for name, copy in film.copies.items():
                _decide(film, name, copy, reader, tally)
    return tally


def measure(films: int, native: int) -> dict:
    """The keeper's outcome and the frame facts' margins, per half (module docstring)."""
    small = sorted(REAL_FILMS.glob("*.jpg"))[:films]
    large = sorted(NATIVE_FILMS.glob("*.jpg"))[:native]
    jobs = []
    for films_of_one_archive in (small, large):  # each set is its own archive
        sources = [
            (n, path, "choose" if n % 2 == 0 else "check")
            for n, path in enumerate(films_of_one_archive)
        ]
        if not sources:
            continue
        archive = ArchiveStats.of(sources)
        chunk = CHUNK if films_of_one_archive is small else 1  # a native film is heavy
        jobs += [(sources[i : i + chunk], archive) for i in range(0, len(sources), chunk)]
    with ProcessPoolExecutor(max_workers=WORKERS) as pool:
        tallies = list(pool.map(_measure_chunk, jobs))
    tally = Tally()
    for one in tallies:
        tally.kept.update(one.kept)
        tally.rules.update(one.rules)
        tally.turned_kept.update(one.turned_kept)
        for key, values in one.sides.items():
            tally.sides.setdefault(key, []).extend(values)
    found: dict = {"films at 512 px": len(small), "native films": len(large)}
    for half in ("choose", "check"):
        rows = {k: v for k, v in tally.kept.items() if k[0] == half}
        groups = sum(rows.values())
        kept = sum(v for k, v in rows.items() if k[3] == "original kept")
        wrong = {f"{k[1]} | {k[2]}": v for k, v in sorted(rows.items()) if k[3] == "copy kept"}
        by_archive = {}
        for archive in ("512 px", "native"):
            rows_of = {k: v for k, v in rows.items() if k[1].startswith(archive)}
            kept_of = sum(v for k, v in rows_of.items() if k[3] == "original kept")
            by_archive[archive] = f"{kept_of} of {sum(rows_of.values())}"
        found[half] = {
            "original kept, by archive": by_archive,
            "groups": groups,
            "original kept": kept,
            "share kept": round(kept / groups, 4) if groups else None,
            "turned copies kept": tally.turned_kept[half],
            "copy kept, by case": wrong,
            "deciding rule": {k[1]: v for k, v in sorted(tally.rules.items()) if k[0] == half},
        }
    for (half, name), values in sorted(tally.sides.items()):
        found[half].setdefault("margins", {})[name] = _spread(values)
    return found


def figures(films: int = 120, native: int = 25) -> dict:
    """The measurement, merged into ``bench/keeper/keeper.json``; or why it was skipped."""
    if (skipped := absent("bench.keeper.bordered")) is not None:
        return skipped
    found = {"measured": True, **measure(films, native)}
    stored = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    stored[BORDERED_KEY] = found
    write_bytes(RESULTS, (json.dumps(stored, indent=1, sort_keys=True) + "\n").encode())
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.keeper.bordered", description=__doc__)
    parser.add_argument("--films", type=int, default=120, help="real films at 512 px to use")
    parser.add_argument("--native", type=int, default=25, help="native-size grey films to use")
    arguments = parser.parse_args(argv)
    found = figures(arguments.films, arguments.native)
    print(json.dumps(found, indent=1))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
