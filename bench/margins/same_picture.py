"""Margins of the same-picture limits, measured on a synthetic source whose truth is known.

For every planted copy (augmented copies, in their folder and among the originals) and
every re-filing: the hash distance in the best orientation and the pixel difference in that
orientation. For distinct films (visits of one patient, and each film's nearest distinct
neighbour by hash): the same figures. A limit is sound when it keeps a quarter of margin
from the largest value on the copy side and the smallest on the distinct side.

    uv run python -m bench.margins.same_picture --films 200 --seed 0  # the default sample
    uv run python -m bench.margins.same_picture \
        --zip bench/corpus/sample-4000-seed7-allcopies.zip --all-copies
    uv run python -m bench.margins.same_picture --kit              # real-size test films

Figures from this script describe the synthetic sample only, never the real archive.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import zipfile
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

from curation.core.vocabulary import SAME_PICTURE_RADIUS
from curation.drawing.reframe import REFRAMINGS
from curation.hashes.hashing import AverageHash512, View, hamming
from curation.hashes.pairs import as_codes, range_pairs
from curation.same_picture.pixels import SAME_PICTURE_LIMIT, Comparison, compare
from curation.sample import SampleTruth, truth_path, write_sample_archive

MARGIN = 0.25


@dataclass(frozen=True)
class Measure:
    kind: str
    side: str  # "copy" or "distinct"
    first: str
    second: str
    view: str
    distance: int
    difference: float


def _films(root: Path) -> dict[str, Path]:
    """Stem -> file, for stems filed once (the planted duplicate stems are left out)."""
    seen: dict[str, list[Path]] = defaultdict(list)
    for path in sorted(root.rglob("*")):
        if path.suffix.lower() == ".jpg":
            seen[path.stem].append(path)
    return {stem: paths[0] for stem, paths in seen.items() if len(paths) == 1}


def _best_view(a: dict[View, bytes], b: dict[View, bytes]) -> tuple[View, int]:
    return min(((v, hamming(a[v], b[View.identity])) for v in View), key=lambda x: x[1])


def measure(root: Path, truth: SampleTruth) -> list[Measure]:
    """Every copy, re-filing and distinct relation of the truth, measured."""
    bad = {b.stem for b in truth.bad_inputs}
    planted = {c.stem for c in truth.augmented + truth.augmented_among_originals}
    files = {
        stem: path
        for stem, path in _films(root).items()
        if stem in planted | set(truth.originals) and stem not in bad
    }
    hasher = AverageHash512()
    hashes = {stem: hasher.hash_views(path) for stem, path in files.items()}
    related: set[frozenset[str]] = set()
    jobs: list[tuple[str, str, str, str]] = []

    def add(kind: str, side: str, first: str, second: str) -> None:
        if first in hashes and second in hashes:
            related.add(frozenset((first, second)))
            jobs.append((kind, side, first, second))

    for copy in truth.augmented + truth.augmented_among_originals:
        if copy.kind in REFRAMINGS:
            continue  # another frame: its own margins (bench.same_picture.frames) cover it
        add(f"copy: {copy.kind}", "copy", copy.source, copy.stem)
    for twin in truth.double_annotated:
        add("re-filing", "copy", twin.first, twin.second)
    visits = truth.lookalike_groups + truth.distant_visit_groups + truth.patient_groups
    for group in visits:
        for a, b in combinations(sorted(group), 2):
            if frozenset((a, b)) not in related:  # a re-filing is one picture, not a visit
                add("visits of one patient", "distinct", a, b)
    copies_of = {c.stem for c in truth.augmented + truth.augmented_among_originals}
    originals = sorted(s for s in truth.originals if s in hashes and s not in copies_of)
    own = as_codes([hashes[s][View.identity] for s in originals])
    nearest: dict[str, tuple[int, str]] = {}
    for view in View:
        turned = as_codes([hashes[s][view] for s in originals])
        for block in range_pairs(own, turned, 128):
            for q, t, distance in block.tolist():
                pair = frozenset((originals[q], originals[t]))
                closer = distance < nearest.get(originals[q], (999, ""))[0]
                if q != t and pair not in related and closer:
                    nearest[originals[q]] = (distance, originals[t])
    for stem, (_, other) in sorted(nearest.items()):
        if frozenset((stem, other)) not in related:
            add("nearest distinct film", "distinct", stem, other)
    results = []
    for kind, side, first, second in jobs:
        view, distance = _best_view(hashes[first], hashes[second])
        difference = compare(files[first], files[second], view).difference
        results.append(Measure(kind, side, first, second, view.value, distance, difference))
    return results


def margins(measures: list[Measure]) -> dict[str, object]:
    """Per kind: count, largest (copies) or smallest (distinct) figures; and the limits."""
    kinds: dict[str, list[Measure]] = defaultdict(list)
    for m in measures:
        kinds[m.kind].append(m)
    table = {}
    for kind, rows in sorted(kinds.items()):
        pick = max if rows[0].side == "copy" else min
        table[kind] = {
            "side": rows[0].side,
            "pairs": len(rows),
            "difference": round(pick(r.difference for r in rows), 3),
            "hash_distance": pick(r.distance for r in rows),
        }
    copy = [m for m in measures if m.side == "copy"]
    distinct = [m for m in measures if m.side == "distinct"]
    worst_copy = max(m.difference for m in copy)
    closest = min(m.difference for m in distinct)
    return {
        "kinds": table,
        "pixel": {
            "limit": SAME_PICTURE_LIMIT,
            "largest_copy": round(worst_copy, 3),
            "smallest_distinct": round(closest, 3),
            "sound": (1 + MARGIN) * worst_copy <= SAME_PICTURE_LIMIT <= (1 - MARGIN) * closest,
        },
        "hash": {
            "radius": SAME_PICTURE_RADIUS,
            "largest_copy": max(m.distance for m in copy),
            "smallest_distinct": min(m.distance for m in distinct),
        },
    }


def markdown(result: dict[str, object], title: str) -> str:
    lines = [
        f"#### {title}",
        "",
        "| relation | side | pairs | pixel difference | hash distance (best orientation) |",
        "|---|---|---|---|---|",
    ]
    for kind, row in result["kinds"].items():
        word = "largest" if row["side"] == "copy" else "smallest"
        lines.append(
            f"| {kind} | {row['side']} | {row['pairs']} | {word} {row['difference']} "
            f"| {word} {row['hash_distance']} |"
        )
    pixel, hashed = result["pixel"], result["hash"]
    lines += [
        "",
        f"Pixel limit {pixel['limit']}: largest copy {pixel['largest_copy']}, smallest distinct "
        f"{pixel['smallest_distinct']} (quarter margin both sides: "
        f"{'yes' if pixel['sound'] else 'NO'}). Candidate radius {hashed['radius']} bits: largest "
        f"copy {hashed['largest_copy']}, smallest distinct {hashed['smallest_distinct']} "
        "(distinct films inside the radius are candidates the pixel check must reject).",
    ]
    return "\n".join(lines) + "\n"


def run(films: int, seed: int, all_copies: bool, archive: Path | None = None) -> dict[str, object]:
    """Margins on a sample written for the occasion, or on ``archive`` (with its truth file)."""
    with tempfile.TemporaryDirectory(prefix="pericurate-margins-") as folder:
        if archive is None:
            archive = Path(folder) / "sample.zip"
            options = {"all_copies_among_originals": True} if all_copies else {}
            write_sample_archive(archive, seed=seed, films=films, **options)
        truth = SampleTruth.from_json(truth_path(archive).read_text())
        with zipfile.ZipFile(archive) as zipped:
            zipped.extractall(Path(folder) / "root")
        return margins(measure(Path(folder) / "root", truth))


def kit_measures(
    compare_films: Callable[[Path, Path, View], Comparison] = compare,
) -> list[Measure]:
    """The real-size test films of ``support/film_kit.py`` and their copies (the cases of
    ``support/same_picture_cases.py``), compared by ``compare_films`` (the pixel check's own
    ``compare`` unless a variant is measured: ``bench.margins.check_scale``)."""
    from support import same_picture_cases as cases
    from support.film_kit import film, save

    results = []
    with tempfile.TemporaryDirectory(prefix="pericurate-kit-") as folder:
        for seed in cases.SEEDS:
            picture = film(seed)
            original = save(picture, Path(folder) / f"{seed}.jpg", 92)
            hashes = AverageHash512().hash_views(original)
            relations = [(n, "copy", h, v) for n, (h, v) in cases.COPIES.items()]
            relations += [(n, "distinct", h, View.identity) for n, h in cases.DISTINCT.items()]
            for name, side, how, view in relations:
                made, quality = cases.make_case(picture, how, seed)
                other = save(made, Path(folder) / f"{seed}-{how}.jpg", quality)
                distance = hamming(hashes[view], AverageHash512().hash_views(other)[View.identity])
                difference = compare_films(original, other, view).difference
                results.append(
                    Measure(name, side, str(seed), how, view.value, distance, difference)
                )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--films", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--all-copies", action="store_true")
    parser.add_argument("--kit", action="store_true", help="the real-size test films instead")
    parser.add_argument("--zip", type=Path, help="an existing sample zip (truth file beside it)")
    args = parser.parse_args()
    if args.kit:
        result, title = margins(kit_measures()), "real-size test films (support/film_kit.py)"
    else:
        result = run(args.films, args.seed, args.all_copies, args.zip)
        title = f"sample {args.zip.name}" if args.zip else f"sample, {args.films} films"
        title += "" if args.zip else f", seed {args.seed}"
        title += ", every copy also among the originals" if args.all_copies else ""
    print(json.dumps(result, indent=1))
    print(markdown(result, title))


if __name__ == "__main__":
    main()
