"""``python -m bench.scale.lists_memory [--films 262144,1048576] [--scratch S]``: the peak
memory of training the visits' lists, the one job that holds an array as large as the lists.

The job (``curation.visits.inverted``) reads every film's stored vector, a block at a time,
and holds the lists' sums and centres: one list a 16 films, 2,048 components each, so 65,536
lists at 1,000,000 films. It runs on a worker, or in the driver's own process on the local
executor, which runs a lone job there. Here the films are random unit vectors stored as the
visits step stores them (one block of 1,024 a file; their values move the lists' sizes, not
the arrays held), and a child trains the lists over them; its peak resident memory is the
figure, beside the child's resident memory before training (the interpreter and its
libraries) and the size of the centres. Runs on the code before the change too.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import sys
import tempfile
from pathlib import Path

import faiss
import numpy as np

from bench.common.measure import child_json, python_child, run_measured
from curation.core.store import ArrayStore
from curation.visits.blocks import VectorBlocks
from curation.visits.inverted import train_lists
from curation.visits.retrieval import PROJECTED_WIDTH

FILMS = (262_144, 1_048_576)
VERSION = "bench-lists-memory"


def stored(folder: Path, films: int) -> VectorBlocks:
    """``films`` random unit vectors of the search's width, stored a block a file (written
    once: a folder already holding them is read as it is)."""
    store = ArrayStore(folder, VERSION)
    size = int(faiss.cvar.distance_compute_blas_database_bs)  # the visits step's block
    names = [f"{number:064x}" for number in range(-(-films // size))]
    for number, name in enumerate(names):
        if not store.holds(name):
            rng = np.random.default_rng(number)
            count = min(size, films - number * size)
            vectors = rng.standard_normal((count, PROJECTED_WIDTH), dtype=np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            store.put(name, {"vectors": vectors})
    return VectorBlocks(store, names, size, films, PROJECTED_WIDTH)


def child(folder: Path, films: int) -> None:
    """In the measured child: the lists trained over the stored vectors; JSON on stdout."""
    blocks = stored(folder, films)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    centres = train_lists(blocks.count, blocks.width, blocks.films)
    print(
        json.dumps(
            {
                "lists": len(centres),
                "centres_mib": round(centres.nbytes / 2**20, 1),
                "before_training_mib": round(before, 1),
                "centres_sha256": hashlib.sha256(centres).hexdigest(),
            }
        )
    )


def measure(sizes: list[int], scratch: Path) -> list[dict]:
    """Each size's figures, its vectors stored below ``scratch`` first, so that the measured
    child's peak is the training's alone."""
    rows = []
    for films in sizes:
        folder = scratch / f"vectors-{films}"
        stored(folder, films)  # written here, not in the measured child
        run = run_measured(
            python_child("bench.scale.lists_memory", "--child", str(folder), str(films))
        )
        figures = child_json(run)
        rows.append(
            {
                "films": films,
                "lists": figures["lists"],
                "peak_rss_mib": run.peak_rss_mib,
                "before_training_mib": figures["before_training_mib"],
                "centres_mib": figures["centres_mib"],
                "centres_sha256": figures["centres_sha256"],
                "cpu_s": round(run.cpu_s, 1),
                "wall_s": run.wall_s,
            }
        )
        print(json.dumps(rows[-1]), file=sys.stderr)
    return rows


def part(films: tuple[int, ...]) -> dict:
    """``make bench``'s part: each size measured, the stored vectors removed after."""
    with tempfile.TemporaryDirectory(prefix="pericurate-lists-memory-", dir="/tmp") as scratch:
        return {"lists_memory": measure(list(films), Path(scratch))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--films", default=",".join(map(str, FILMS)))
    parser.add_argument("--scratch", type=Path, help="keep the stored vectors here")
    parser.add_argument("--child", nargs=2, metavar=("FOLDER", "FILMS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(Path(args.child[0]), int(args.child[1]))
        return
    sizes = tuple(int(size) for size in args.films.split(","))
    found = measure(list(sizes), args.scratch) if args.scratch else part(sizes)["lists_memory"]
    print(json.dumps(found, indent=1))


if __name__ == "__main__":
    main()
