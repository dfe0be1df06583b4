"""``python -m bench.keeper.altered``: which film of a same-picture group is kept, on real
radiographs.

Reads the 120 real panoramic radiographs of ``../shared/realfilms-dev/films`` (512 x 512 RGB
JPEG, squashed from their wider frames; never copied into the repository) and skips with one
sentence when that folder is absent. From each film it makes every alteration of issue 22's
table (``ALTERATIONS`` in ``bench.keeper.copies``), writes the copy as an augmentation
script would (``WRITERS``: at the script's default quality 75, or at the originals' own
quality 95, where quality tells nothing), numbers it once below and once above its
original (``090131`` vs ``36531``: above as a number, below as text), and builds the group
of the two films directly: detection is not measured here, only the keeper
(``curation.keeper.groups.same_picture_groups`` on the facts
``curation.keeper.evidence``
reads from the files). The archive's mean film is that of
the originals plus one copy of each (cycling through the alterations), as in an archive
whose copies are a minority.

Goal: the original kept in every group, no turned film kept. It also prints the upright
and mirror margins of ``curation.keeper.evidence``, how many films fit their mirror
better
against the mean of the others (``mirror_fits``), and the tone rules' leads
(``curation.keeper.tone``) on the pairs that reach them, at 512 px and on 24 films
upscaled
to the archive's sizes (grey, quality 95), and, beyond the table, which film is kept and by
which rule for blurred, noised and sharpened copies at quality 95 (``BEYOND``; numbered
above their original, a copy kept is a rule naming the original). Figures go to
``bench/keeper/keeper.json``.

    uv run --frozen python -m bench.keeper.altered           # about 6 minutes on 2 busy cores
    uv run --frozen python -m bench.keeper.altered --films 20  # a quick look
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import cv2
import numpy as np
from PIL import Image

from bench.common.real_films import REAL_FILMS, absent, upscaled
from bench.keeper.copies import ALTERATIONS, BEYOND, TURNED, grey_jpeg, jpeg
from bench.keeper.reencoding import VIEWS, Misses
from curation.core.atomic import write_bytes
from curation.hashes.hashing import AverageHash512, View
from curation.index.provenance import encoder_signature
from curation.keeper.evidence import (
    correlation,
    draft_grey,
    hash_bits,
    header_and_border,
    mean_grid,
    turn_of,
)
from curation.keeper.frame import border_shares, corner_share
from curation.keeper.groups import same_picture_groups
from curation.keeper.rules import STRONG_RULES, FilmFacts, strong_evidence
from curation.keeper.tone import TypicalTone, tone_of
from curation.same_picture.candidates import SamePicture
from curation.same_picture.pixels import Comparison

RESULTS = Path(__file__).with_name("keeper.json")
BORDERED_KEY = "real_films_bordered"  # written by bench.keeper.bordered into the same file
WRITERS = {"script q75": 75, "own quality q95": 95}


def _numbers(index: int) -> tuple[str, str, str]:
    """The original's id, a copy id above it as a number but below as text (``090131`` vs
    ``36531``), and one below it in both."""
    original = f"3{index:03d}1"
    return original, f"09{index:03d}1", f"1{index:03d}1"


def _signature(path: Path) -> str:
    with Image.open(path) as image:
        return encoder_signature(image)


def _facts(
    path: Path, views: dict[View, bytes], mean: np.ndarray, usual: str, typical: TypicalTone
) -> FilmFacts:
    with Image.open(path) as image:
        width, height = image.size
    file = header_and_border(path)
    contrast, rough = typical.departures(tone_of(path))
    return FilmFacts(
        width,
        height,
        (),
        0.0,
        turned=turn_of(views, mean),
        borders=file.borders,
        filled_corners=file.corners,
        quality=file.quality,
        unusual_encoder=_signature(path) != usual,
        contrast_departure=contrast,
        roughness_departure=rough,
    )


def _contrast_lead(own: FilmFacts, other: FilmFacts) -> float:
    return own.contrast_departure - abs(other.contrast_departure)


def _roughness_lead(own: FilmFacts, other: FilmFacts) -> float:
    return own.roughness_departure - other.roughness_departure


def _tone_margins(pairs: list[tuple[str, FilmFacts, FilmFacts]]) -> dict[str, dict]:
    """For each tone rule, over the (alteration, original, copy) pairs that reach it (tied on
    every rule before it): the original's largest lead (the rule would drop the original at
    a margin below it) and per alteration the copy's smallest lead (the rule names the copy
    at a margin up to it). Leads in spreads, as the rules read them
    (``curation.keeper.rules``)."""
    names = [name for name, _ in STRONG_RULES]
    found = {}
    for rule, lead in (("local contrast", _contrast_lead), ("tone curve", _roughness_lead)):
        before = names.index(rule)
        wrong, caught = -np.inf, {}
        for name, original, copy in pairs:
            group = {"o": original, "c": copy}
            own, other = (
                [v for v, _ in strong_evidence(f, set(group), group)[:before]] for f in "oc"
            )
            if own != other:
                continue
            wrong = max(wrong, lead(original, copy))
            caught[name] = min(caught.get(name, np.inf), lead(copy, original))
        found[rule] = {
            "original's largest lead (must stay below the margin)": round(float(wrong), 3),
            "copy's smallest lead, by alteration": {
                k: round(float(v), 3) for k, v in caught.items()
            },
        }
    return found


def _upright_margins(views: list[dict[View, bytes]], mean: np.ndarray) -> dict[str, float]:
    """Own frame's fit minus each turn's fit (and the mirror's), smallest over the films."""
    smallest: dict[str, float] = {}
    for film in views:
        own = correlation(hash_bits(film[View.identity]), mean)
        for view in (View.mirror, View.rot90, View.rot180, View.rot270):
            gap = own - correlation(hash_bits(film[view]), mean)
            smallest[view.value] = round(min(smallest.get(view.value, 1.0), gap), 3)
    return smallest


def _borders(paths: list[Path], pick: Callable = max) -> tuple[float, float]:
    """The largest (``pick=min``: smallest) padding and filled-corner shares, unthresholded."""
    greys = [draft_grey(p) for p in paths]
    return pick(max(border_shares(g)) for g in greys), pick(corner_share(g, 0.0) for g in greys)


MIRROR_WIDTHS = (16, 64, 256)


def mirror_fits(originals: list[Path]) -> dict[str, int]:
    """How many films fit their mirror better than themselves: correlation with the mean of
    the other films (grey, at each of ``MIRROR_WIDTHS`` px square)."""
    found = {}
    for width in MIRROR_WIDTHS:
        films = np.stack(
            [
                cv2.resize(draft_grey(p), (width, width), interpolation=cv2.INTER_AREA)
                for p in originals
            ]
        ).astype(np.float64)
        total = films.sum(axis=0)
        mirrored = 0
        for film in films:
            mean = (total - film) / (len(films) - 1)
            mirrored += correlation(film[:, ::-1], mean) > correlation(film, mean)
        found[f"{width} px"] = int(mirrored)
    return found


UPSCALED_FILMS = 24
UPSCALED_ALTERATIONS = (
    *("gamma 0.8", "gamma 1.25", "brightness/contrast", "CLAHE clip 2", "CLAHE clip 4"),
    *("global equalisation", "mirror", "crop 1%"),
)


def upscaled_tone_margins(sources: list[Path]) -> dict:
    """The tone rules' leads at the archive's film sizes: each film in grey, upscaled to a
    real archive size and written at quality 95 as the original; its re-toned copies (and a
    mirror and a crop, which must not fire) written from it in grey at quality 95 too."""
    hasher = AverageHash512()
    with tempfile.TemporaryDirectory(prefix="bench-keeper-up-") as temp:
        folder = Path(temp)
        originals, copies = [], {}
        for n, source in enumerate(sources):
            grey = cv2.cvtColor(np.asarray(Image.open(source).convert("RGB")), cv2.COLOR_RGB2GRAY)
            original = folder / f"original-{n}.jpg"
            write_bytes(original, grey_jpeg(upscaled(grey, n)))
            originals.append(original)
            decoded = cv2.cvtColor(np.asarray(Image.open(original)), cv2.COLOR_GRAY2RGB)
            for a, name in enumerate(UPSCALED_ALTERATIONS):
                altered = ALTERATIONS[name](decoded)[0]
                path = folder / f"copy-{n}-{a}.jpg"
                write_bytes(path, grey_jpeg(cv2.cvtColor(altered, cv2.COLOR_RGB2GRAY)))
                copies[(n, name)] = path
        one_copy_each = [copies[(n, UPSCALED_ALTERATIONS[n % 8])] for n in range(len(sources))]
        views = {p: hasher.hash_views(p) for p in [*originals, *copies.values()]}
        mean = mean_grid({str(p): views[p] for p in originals + one_copy_each})
        started = time.perf_counter()
        own_tones = [tone_of(p) for p in originals]
        milliseconds = (time.perf_counter() - started) * 1000 / len(originals)
        typical = TypicalTone.of(own_tones + [tone_of(p) for p in one_copy_each])
        usual = _signature(originals[0])
        own = [_facts(p, views[p], mean, usual, typical) for p in originals]
        pairs = [
            (name, own[n], _facts(path, views[path], mean, usual, typical))
            for (n, name), path in sorted(copies.items())
        ]
        misses = Misses()
        for (n, name), path in sorted(copies.items()):
            view = VIEWS.get(name, View.identity)
            pair = SamePicture("36531", "090131", view, 0, Comparison(0, None, True))
            misses.read(name, originals[n], path, pair, {"36531": own[n], "090131": own[n]})
    return {
        "films": len(sources),
        "tone statistics, ms per film (one process)": round(milliseconds, 1),
        **_tone_margins(pairs),
        "reencoding": misses.summary(),
    }


def measure(films: int = 120) -> dict:
    """The keeper's outcome on every alteration, writer and numbering; see the docstring."""
    sources = sorted(REAL_FILMS.glob("*.jpg"))[:films]
    hasher = AverageHash512()
    with tempfile.TemporaryDirectory(prefix="bench-keeper-") as temp:
        folder = Path(temp)
        originals = [folder / f"original-{n}.jpg" for n in range(len(sources))]
        for source, target in zip(sources, originals, strict=True):
            write_bytes(target, source.read_bytes())
        own_views = [hasher.hash_views(p) for p in originals]
        copies: dict[tuple[int, str, str], Path] = {}
        for n, source in enumerate(sources):
            picture = np.asarray(Image.open(source).convert("RGB"))
            for a, (name, alter) in enumerate(ALTERATIONS.items()):
                altered, quality = alter(picture)
                for w, (writer, default) in enumerate(WRITERS.items()):
                    path = folder / f"copy-{n}-{a}-{w}.jpg"
                    write_bytes(path, jpeg(altered, quality or default))
                    copies[(n, name, writer)] = path
        copy_views = {key: hasher.hash_views(path) for key, path in copies.items()}
        names = list(ALTERATIONS)
        one_copy_each = [
            copy_views[(n, names[n % len(names)], next(iter(WRITERS)))] for n in range(len(sources))
        ]
        archive = {f"f{n}": v for n, v in enumerate(own_views + one_copy_each)}
        mean = mean_grid(archive)
        first = next(iter(WRITERS))
        signatures = [_signature(p) for p in originals] + [
            _signature(copies[(n, names[n % len(names)], first)]) for n in range(len(sources))
        ]
        usual = Counter(signatures).most_common(1)[0][0]
        typical = TypicalTone.of(
            [tone_of(p) for p in originals]
            + [tone_of(copies[(n, names[n % len(names)], first)]) for n in range(len(sources))]
        )
        original_facts = [
            _facts(p, v, mean, usual, typical) for p, v in zip(originals, own_views, strict=True)
        ]
        reaching: list[tuple[str, FilmFacts, FilmFacts]] = []
        outcome: Counter[tuple[str, str, str]] = Counter()
        deciding: Counter[tuple[str, str]] = Counter()
        turned_kept = 0
        misses = Misses()
        for (n, name, writer), path in sorted(copies.items(), key=lambda kv: str(kv[0])):
            copy_fact = _facts(path, copy_views[(n, name, writer)], mean, usual, typical)
            reaching.append((f"{name} | {writer}", original_facts[n], copy_fact))
            original, above, below = _numbers(n)
            view = VIEWS.get(name, View.identity)
            for copy_id in (above, below):
                facts = {original: original_facts[n], copy_id: copy_fact}
                pair = SamePicture(original, copy_id, view, 0, Comparison(0, None, True))
                found = misses.read(f"{name} | {writer}", originals[n], path, pair, facts)
                [group] = same_picture_groups([pair], facts, {}, found)
                kept_original = group.kept == original
                outcome[(name, writer, "original kept" if kept_original else "copy kept")] += 1
                if kept_original:
                    deciding[(name, group.dropped[0].evidence.split(":")[0][:40])] += 1
                turned_kept += int(not kept_original and name in TURNED)
        beyond: Counter[tuple[str, str]] = Counter()
        for n, source in enumerate(sources):
            picture = np.asarray(Image.open(source).convert("RGB"))
            for b, (name, alter) in enumerate(BEYOND.items()):
                path = folder / f"beyond-{n}-{b}.jpg"
                write_bytes(path, jpeg(alter(picture, n), 95))
                fact = _facts(path, hasher.hash_views(path), mean, usual, typical)
                original, above, below = _numbers(n)
                for numbered, copy_id in (("above", above), ("below", below)):
                    pair = SamePicture(
                        original, copy_id, View.identity, 0, Comparison(0, None, True)
                    )
                    facts = {original: original_facts[n], copy_id: fact}
                    found = misses.read(name, originals[n], path, pair, facts)
                    [group] = same_picture_groups([pair], facts, {}, found)
                    kept = "original" if group.kept == original else "copy"
                    named = group.dropped[0].evidence.split(":")[0]
                    beyond[(f"{name} | numbered {numbered}", f"{kept} kept | {named}")] += 1
        originals_border = _borders(originals)
        mirrors = {"films": len(originals), **mirror_fits(originals)}
        of = {name: [p for (n, a, w), p in copies.items() if a == name] for name in ALTERATIONS}
        least_pad = _borders(of["pad 2%"], min)[0]
        least_corner = _borders(of["rotation 1 deg"], min)[1]
    groups = 2 * len(copies)
    kept = sum(v for k, v in outcome.items() if k[2] == "original kept")
    return {
        "films": len(sources),
        "groups": groups,
        "original_kept": kept,
        "copy_kept": groups - kept,
        "turned_copies_kept": turned_kept,
        "by_alteration": {
            f"{name} | {writer}": {
                "original kept": outcome[(name, writer, "original kept")],
                "copy kept": outcome[(name, writer, "copy kept")],
            }
            for name in ALTERATIONS
            for writer in WRITERS
        },
        "deciding_rule": {f"{k[0]} | {k[1]}": v for k, v in sorted(deciding.items())},
        "upright_margin_smallest": _upright_margins(own_views, mean),
        "original_quality": sorted({f.quality for f in original_facts}),
        "mirror_fits": mirrors,
        "beyond_the_table_q95": {
            f"{name} | {outcome}": count for (name, outcome), count in sorted(beyond.items())
        },
        "reencoding": misses.summary(),
        "tone_margins": _tone_margins(reaching),
        "tone_margins_upscaled": upscaled_tone_margins(sources[:UPSCALED_FILMS]),
        "typical_tone": dataclasses.asdict(typical),
        "margins": {
            "padding: originals' largest": originals_border[0],
            "padding: pad 2% copies' smallest": least_pad,
            "filled corners: originals' largest": originals_border[1],
            "filled corners: rotation 1 deg copies' smallest": least_corner,
        },
    }


def figures(films: int = 120) -> dict:
    """The measurement, also written to ``bench/keeper/keeper.json``; or why it was skipped."""
    if (skipped := absent("bench.keeper.altered")) is not None:
        return skipped
    found = {"measured": True, **measure(films)}
    stored = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    bordered = {k: v for k, v in stored.items() if k == BORDERED_KEY}  # bench.keeper.bordered's
    write_bytes(RESULTS, (json.dumps(found | bordered, indent=1, sort_keys=True) + "\n").encode())
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.keeper.altered", description=__doc__)
    parser.add_argument("--films", type=int, default=120, help="how many real films to use")
    found = figures(parser.parse_args(argv).films)
    if not found["measured"]:
        return
    print(json.dumps({k: v for k, v in found.items() if k != "deciding_rule"}, indent=1))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
