"""The one part of the audit's visit check whose cost grows with the square of the rows: the
exact search for each film's nearest films (``curation.visits.find.stored_nearest``).

The search is a flat search cut into faiss's own blocks (``curation.visits.retrieval``,
``search_tiles``): every block of query films against every block of indexed films, one job
per tile, each reading its two blocks of vectors from the vectors' store. Here one full tile
is measured on random unit vectors of the search's width (``PROJECTED_WIDTH``; ``--widths``
adds others, such as a VLAD vector's full 8,192 components, the search's width before the
projection) (CPU seconds, the best of ``REPEATS``): the products and the choice of each
query's best (``tile_best``), and reading its blocks from an ``ArrayStore`` (a block of 1,024
films a file) into one array each; the number of tiles at each size gives the search's CPU at
that size, and per row.

``python -m bench.scale.audit_search --widths 1024,8192`` prints the figures as JSON and writes
them to ``audit_search.json`` beside this file.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import faiss
import numpy as np

from curation.core.atomic import write_bytes
from curation.core.store import ArrayStore
from curation.visits.retrieval import PROJECTED_WIDTH, search_tiles, search_width, tile_best

ROWS = (4000, 16000, 64000, 1000000)
REPEATS = 3
RESULTS = Path(__file__).with_name("audit_search.json")


def _cpu(work: Callable[[], object]) -> float:
    """The least CPU seconds of ``REPEATS`` calls of ``work``."""
    spent = []
    for _ in range(REPEATS):
        start = time.process_time()
        work()
        spent.append(time.process_time() - start)
    return min(spent)


def tile_cost(scratch: Path, width: int) -> dict[str, float | int]:
    """CPU seconds of one full tile: its products and choice, and reading its two blocks."""
    queries = int(faiss.cvar.distance_compute_blas_query_bs)
    indexed = int(faiss.cvar.distance_compute_blas_database_bs)
    tile = search_tiles(queries + indexed, width)[1]  # the full query block, second index block
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((queries + indexed, width)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    store = ArrayStore(scratch, f"search-{width}")
    names = [f"{n:064x}" for n in range(-(-len(vectors) // indexed))]
    for n, name in enumerate(names):  # as the vectors' jobs store them: a block a file
        store.put(name, {"vectors": vectors[n * indexed : (n + 1) * indexed]})
    keep = search_width(8, len(vectors))[1]
    query_rows, indexed_rows = vectors[:queries], vectors[queries:]

    def products() -> None:
        tile_best(tile, query_rows, indexed_rows, keep)

    def reads() -> None:  # as the tile's job reads them: its blocks, then one array each
        found = [store.get(name) for name in names]
        np.concatenate([arrays["vectors"] for arrays in found if arrays is not None])

    return {
        "query_block": queries,
        "indexed_block": indexed,
        "products_cpu_s": round(_cpu(products), 3),
        "reads_cpu_s": round(_cpu(reads), 3),
    }


def measure(rows: tuple[int, ...], scratch: Path, width: int) -> dict:
    """The tile's cost at ``width``, and the search's tiles and CPU at each size."""
    tile = tile_cost(scratch, width)
    per_tile = float(tile["products_cpu_s"]) + float(tile["reads_cpu_s"])
    sizes = {}
    for n in rows:
        tiles = len(search_tiles(n, width))
        sizes[str(n)] = {
            "tiles": tiles,
            "search_cpu_s": round(tiles * per_tile),
            "search_cpu_ms_per_row": round(1000 * tiles * per_tile / n, 1),
        }
    return {"tile": tile, "sizes": sizes}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.scale.audit_search", description=__doc__)
    parser.add_argument("--rows", default=",".join(map(str, ROWS)), help="dataset sizes")
    parser.add_argument("--widths", default=str(PROJECTED_WIDTH), help="vector widths")
    args = parser.parse_args(argv)
    sizes = tuple(int(n) for n in args.rows.split(",") if n)
    with tempfile.TemporaryDirectory(prefix="pericurate-audit-search-", dir="/tmp") as scratch:
        found = {
            str(width): measure(sizes, Path(scratch), int(width))
            for width in args.widths.split(",")
        }
    write_bytes(RESULTS, (json.dumps(found, indent=1, sort_keys=True) + "\n").encode())
    print(json.dumps(found, indent=1))


if __name__ == "__main__":
    main()
