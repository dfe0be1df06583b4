"""``python -m bench.peers.lookalike_spread``: how far apart the corpus's planted look-alike visits
hash, against distinct films, at radii beyond the look-alike rule's 30 bits.

Goal 1 asks for look-alike recall at least every peer's with no false pair. This measures what
any radius of the project's hash would give on the corpus's originals: for each planted
look-alike pair and each pair of distinct films (no planted relation joins them, even through
other films), the smallest distance over the orientations the look-alike search uses (film A
in each ``View`` against film B's own hash). A radius that takes in the visits beyond 30 bits
takes in distinct films too when the two spreads overlap; the figures say by how much.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from bench.common.corpus import corpus_source, corpus_zip
from bench.peers.compare import Groups, Pair, originals_folder, relations, truth_groups
from curation.core.parallel import ordered_map
from curation.core.vocabulary import LOOKALIKE_DISTANCE
from curation.hashes.hashing import AverageHash512, View
from curation.lookalikes.components import lookalike_links
from curation.sample import SampleTruth, truth_path

RADII = (LOOKALIKE_DISTANCE, 40, 50, 60, 70, 80, 90)


def nearest_views(views: dict[str, dict[View, bytes]], radius: int) -> dict[Pair, int]:
    """Every pair of films within ``radius`` bits in some orientation, at its smallest distance:
    the look-alike step's own search (``lookalike_links``), run at a wider radius."""
    return {(link.first, link.second): link.distance for link in lookalike_links(views, radius)}


def spread(
    distances: dict[Pair, int],
    lookalikes: set[Pair],
    joined: Groups,
    radii: tuple[int, ...] = RADII,
) -> dict:
    """Look-alike pairs and distinct pairs within each radius, and both spreads' ends."""
    planted = sorted(distances[p] for p in lookalikes if p in distances)
    distinct = sorted(d for (a, b), d in distances.items() if joined.find(a) != joined.find(b))
    return {
        "lookalike_pairs": len(lookalikes),
        "lookalike_bits": {
            "min": planted[0] if planted else None,
            "median": float(np.median(planted)) if planted else None,
            "max_within_search": planted[-1] if planted else None,
            "beyond_search": len(lookalikes) - len(planted),
        },
        "nearest_distinct_bits": distinct[0] if distinct else None,
        "within": [
            {
                "radius": r,
                "lookalike": sum(d <= r for d in planted),
                "distinct": sum(d <= r for d in distinct),
            }
            for r in radii
        ],
    }


def measure(archive: Path, radius: int = max(RADII), workers: int = 0) -> dict:
    truth = SampleTruth.from_json(truth_path(archive).read_text())
    folder = originals_folder(corpus_source(archive).root)
    hasher = AverageHash512()
    stems = sorted(truth.originals)
    hashed = ordered_map(hasher.hash_views, [folder / f"{s}.jpg" for s in stems], workers, 32)
    views = dict(zip(stems, hashed, strict=True))
    found = spread(
        nearest_views(views, radius), relations(truth)["look-alike"], truth_groups(truth)
    )
    return {"corpus": archive.name, "films": len(stems), **found}


def report_rows(result: dict) -> list[list[str]]:
    """Rows of the ``make bench`` table (``bench.report.tables``), beside goal 1's."""
    bits, total = result["lookalike_bits"], result["lookalike_pairs"]
    within = ", ".join(
        f"{row['radius']}: {row['lookalike']} and {row['distinct']:,}" for row in result["within"]
    )
    return [
        [
            f"goal 1 recall: look-alike visit pairs on {result['corpus']}, nearest orientation",
            f"{bits['min']}-{bits['max_within_search']} bits (median {bits['median']:g}; "
            f"{bits['beyond_search']} of {total} beyond {max(RADII)})",
            f"nearest distinct films {result['nearest_distinct_bits']} bits",
            "",
            f"look-alike rule {LOOKALIKE_DISTANCE} bits (fixed by the mission)",
            "",
        ],
        [
            "goal 1 recall: look-alike pairs and distinct pairs within each radius (bits)",
            within,
            "",
            "",
            "",
            "",
        ],
    ]


def table(result: dict) -> str:
    lines = ["| radius (bits) | look-alike pairs within | distinct pairs within |", "|---|---|---|"]
    total = result["lookalike_pairs"]
    for row in result["within"]:
        lines.append(f"| {row['radius']} | {row['lookalike']} of {total} | {row['distinct']:,} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.peers.lookalike_spread", description=__doc__
    )
    parser.add_argument("--zip", type=Path, help="corpus archive (default: --films)")
    parser.add_argument("--films", type=int, default=4000, help="corpus size to build or reuse")
    args = parser.parse_args(argv)
    result = measure(args.zip or corpus_zip(args.films))
    print({k: v for k, v in result.items() if k != "within"})
    print(table(result))


if __name__ == "__main__":
    main()
