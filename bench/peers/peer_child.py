"""One peer on one folder of films, run by the peers' own Python (``bench/peers/env``).

The peers cannot share pericurate's environment: fastdup needs numpy below 2, which the
verifiers package of the environments does not allow. So this file imports nothing of
pericurate or of the bench, only the standard library and the peer, and writes one JSON
object to ``WORK/pairs.json`` (the peers print banners and progress on standard output):
every pair of film stems the peer reports with its closeness, so that the caller can score
the peer at its own default and at any stricter threshold.

    bench/peers/env/.venv/bin/python bench/peers/peer_child.py TOOL FOLDER WORK
"""

from __future__ import annotations

import json
import os
import sys
from itertools import combinations
from pathlib import Path

# The peers' telemetry and downloads stay off: the machines measured here have no internet.
os.environ.setdefault("SENTRY_OPT_OUT", "1")

TOOLS = ("fastdup", "imagededup-phash", "imagededup-ahash", "cleanvision")
# fastdup reports each film's nearest neighbours above this cosine similarity; its own
# default (0.9) is applied by the caller, so that stricter and looser cuts can be scored.
FASTDUP_FLOOR = 0.5
# imagededup's Hamming distances (of 64 bits) are asked up to this; its default is 10.
IMAGEDEDUP_CEILING = 20


def _stem(name: str) -> str:
    return Path(name).stem


def fastdup_pairs(folder: Path, work: Path) -> list[tuple[str, str, float]]:
    """Pairs of stems with fastdup's cosine similarity (higher is closer)."""
    import fastdup

    dataset = fastdup.create(work_dir=str(work / "fastdup"), input_dir=str(folder))
    dataset.run(threshold=FASTDUP_FLOOR, overwrite=True, verbose=False)
    table = dataset.similarity()
    columns = (table["filename_from"], table["filename_to"], table["distance"])
    return [(_stem(a), _stem(b), float(score)) for a, b, score in zip(*columns, strict=True)]


def imagededup_pairs(folder: Path, method: str) -> list[tuple[str, str, float]]:
    """Pairs of stems with imagededup's Hamming distance (of its PHash or AHash; lower is
    closer)."""
    from imagededup.methods import AHash, PHash

    hasher = {"phash": PHash, "ahash": AHash}[method](verbose=False)
    found = hasher.find_duplicates(
        image_dir=folder, max_distance_threshold=IMAGEDEDUP_CEILING, scores=True
    )
    return [(_stem(a), _stem(b), float(d)) for a, near in found.items() for b, d in near]


def cleanvision_pairs(folder: Path) -> list[tuple[str, str, float]]:
    """Pairs of stems in one of cleanvision's near-duplicate sets (its defaults; no score)."""
    from cleanvision import Imagelab

    lab = Imagelab(data_path=str(folder))
    lab.find_issues({"near_duplicates": {}})
    sets = lab.info["near_duplicates"]["sets"]
    return [(_stem(a), _stem(b), 0.0) for s in sets for a, b in combinations(s, 2)]


def main(argv: list[str]) -> None:
    if len(argv) != 3 or argv[0] not in TOOLS:
        raise SystemExit(f"usage: peer_child.py {{{','.join(TOOLS)}}} FOLDER WORK")
    tool, folder, work = argv[0], Path(argv[1]), Path(argv[2])
    if tool == "fastdup":
        pairs = fastdup_pairs(folder, work)
    elif tool.startswith("imagededup-"):
        pairs = imagededup_pairs(folder, tool.removeprefix("imagededup-"))
    else:
        pairs = cleanvision_pairs(folder)
    (work / "pairs.json").write_text(json.dumps({"pairs": pairs}))


if __name__ == "__main__":
    main(sys.argv[1:])
