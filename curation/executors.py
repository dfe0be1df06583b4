"""Where the index and hash steps run: on this machine, or on a Ray cluster (``pericurate[ray]``).

Both executors return what the local chain returns, ``(records, hashes)`` after index,
originals and hash, because both end in the same plain step functions. The Ray executor only
moves the expensive part, decoding and hashing every film, onto Ray Data workers that read the
bytes themselves (a local folder on shared storage, or any filesystem Ray Data reads, such as
object storage). It fills the hash cache keyed by file sha256, and ``hash_films`` then settles
the records from that cache exactly as on one machine. Films whose hash fails on a worker are
left out of the cache, so the local step decodes them again and rejects them with its reason.
"""

from __future__ import annotations

import hashlib
import io
from pathlib import Path
from typing import Any

from curation.hash_films import Hashes, hash_films, read_cache, write_cache
from curation.hashing import AverageHash512, Decode, View
from curation.index import index_source
from curation.originals import drop_augmented_by_name
from curation.records import SourceRecord, pending_images


def index_and_hash_local(
    root: Path, cache_path: Path, *, decode: Decode = "draft", workers: int = 0
) -> tuple[list[SourceRecord], Hashes]:
    """Index, originals and hash on this machine (worker processes over local cores)."""
    records = drop_augmented_by_name(index_source(root))
    return hash_films(root, records, decode=decode, workers=workers, cache_path=cache_path)


def _hash_batch(batch: dict[str, Any], decode: Decode) -> dict[str, list]:
    """Ray Data batch function: file bytes in, sha256 and the five views out (failures empty)."""
    hasher = AverageHash512(decode)
    out: dict[str, list] = {"sha256": [], "ok": [], **{v.value: [] for v in View}}
    for data in batch["bytes"]:
        out["sha256"].append(hashlib.sha256(data).hexdigest())
        try:
            views = hasher.hash_views(io.BytesIO(data))
        except Exception:  # the local step re-decodes this film and records why it failed
            views = dict.fromkeys(View, b"")
        out["ok"].append(all(views.values()))
        for view in View:
            out[view.value].append(views[view])
    return out


def ray_hashes(paths: list[str], decode: Decode, batch_size: int = 8) -> dict[str, dict]:
    """Hash ``paths`` on Ray Data: ``{sha256: {View: bytes}}`` for the files that decode."""
    import ray

    if not paths:
        return {}
    dataset = ray.data.read_binary_files(paths).map_batches(
        _hash_batch, fn_kwargs={"decode": decode}, batch_size=batch_size, batch_format="numpy"
    )
    by_sha: dict[str, dict] = {}
    for row in dataset.iter_rows():
        if row["ok"]:
            by_sha[row["sha256"]] = {v: bytes(row[v.value]) for v in View}
    return by_sha


def index_and_hash_ray(
    root: Path, cache_path: Path, *, decode: Decode = "draft"
) -> tuple[list[SourceRecord], Hashes]:
    """Index on the driver, hash the films on Ray, settle with the local hash step.

    Ray must already be initialised (``ray.init(address=...)``) by the caller.
    """
    records = drop_augmented_by_name(index_source(root))
    version = AverageHash512(decode).version
    cache = read_cache(cache_path, version)
    todo = sorted({f.path for f in pending_images(records) if f.sha256 not in cache})
    cache.update(ray_hashes([str(root / p) for p in todo], decode))
    write_cache(cache_path, version, cache)
    return hash_films(root, records, decode=decode, workers=1, cache_path=cache_path)
