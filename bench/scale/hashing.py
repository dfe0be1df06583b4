"""Hashing throughput, draft (reduced-DCT) against full decode, on the same films in one run.

Run as a child (``python -m bench.scale.hashing ROOT``): index and originals first, then every
film hashed with ``decode="draft"`` and with ``decode="full"`` over all cores, no cache.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from curation.core.parallel import LocalMap
from curation.core.records import pending_images
from curation.hashes.hash_films import hash_films
from curation.hashes.hashing import View, hamming
from curation.index.index import index_source
from curation.index.originals import drop_augmented_by_name


def main(root: Path) -> dict:
    start = time.perf_counter()
    records = drop_augmented_by_name(index_source(root))
    indexed = time.perf_counter() - start
    films = len(pending_images(records))
    result: dict = {"films": films, "index_s": indexed, "workers": os.cpu_count()}
    hashes = {}
    for decode in ("draft", "full"):
        start = time.perf_counter()
        _, hashes[decode] = hash_films(root, records, decode=decode, map=LocalMap())
        seconds = time.perf_counter() - start
        result[decode] = {"seconds": seconds, "films_per_s": films / seconds}
    both = sorted(set(hashes["draft"]) & set(hashes["full"]))
    draft, full = hashes["draft"], hashes["full"]
    identity = [hamming(draft[f][View.identity], full[f][View.identity]) for f in both]
    every_view = [hamming(draft[f][v], full[f][v]) for f in both for v in View]
    result["agreement"] = {
        "films_compared": len(both),
        "same_films_decoded": set(hashes["draft"]) == set(hashes["full"]),
        "identity_mean_bits": sum(identity) / len(identity),
        "identity_max_bits": max(identity),
        "identity_exact_share": sum(d == 0 for d in identity) / len(identity),
        "all_views_mean_bits": sum(every_view) / len(every_view),
        "all_views_max_bits": max(every_view),
    }
    result["speedup"] = result["draft"]["films_per_s"] / result["full"]["films_per_s"]
    return result


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]))))
