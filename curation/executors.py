"""Where the index and hash steps run: on this machine, or on a Ray cluster (``pericurate[ray]``).

Both executors return what the local chain returns, ``(records, hashes)`` after index,
originals and hash, because both end in the same plain step functions. The Ray executor moves
the expensive parts, reading every file (digest, header, XML) and decoding and hashing every
film, onto Ray Data workers that read the bytes themselves (a local folder on shared storage,
or any filesystem Ray Data reads, such as object storage). ``index_source`` is handed a
reader that reads its files on Ray (its cache and decisions unchanged); the hashes fill the
sha256-keyed hash cache, from which ``hash_films`` settles the records exactly as on one
machine. Films whose hash fails on a worker are left out of the hash cache, so the local step
decodes them again and rejects them with its reason.
"""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from curation.hash_films import Hashes, hash_films, read_cache, write_cache
from curation.hashing import AverageHash512, Decode, View
from curation.index import (
    FileFacts,
    file_facts,
    file_kind,
    index_source,
)
from curation.originals import drop_augmented_by_name
from curation.records import Kind, SourceRecord, pending_images
from curation.voc import RawBox


def index_and_hash_local(
    root: Path, cache_path: Path, *, decode: Decode = "draft", workers: int = 0
) -> tuple[list[SourceRecord], Hashes]:
    """Index, originals and hash on this machine (worker processes over local cores)."""
    records = drop_augmented_by_name(index_source(root, workers=workers))
    return hash_films(root, records, decode=decode, workers=workers, cache_path=cache_path)


def _hash_batch(batch: dict[str, Any], decode: Decode) -> dict[str, list]:
    """Ray Data batch function: file bytes in, sha256 and the five views out (failures empty)."""
    hasher = AverageHash512(decode)
    out: dict[str, list] = {"sha256": [], "ok": [], **{v.value: [] for v in View}}
    for data in batch["bytes"]:
        out["sha256"].append(hashlib.sha256(data).hexdigest())
        try:
            views = hasher.hash_views(io.BytesIO(data), strict=True)
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


def _facts_batch(batch: dict[str, Any]) -> dict[str, list]:
    """Ray Data batch function: file bytes and path in, the fields of ``file_facts`` out."""
    out: dict[str, list] = {"path": [], "sha256": [], "size": [], "problem": []}
    out.update({"width": [], "height": [], "boxes": [], "patient_number": []})
    for data, path in zip(batch["bytes"], batch["path"], strict=True):
        facts = file_facts(bytes(data), file_kind(str(path)))
        out["path"].append(path)
        for name in ("sha256", "size", "problem", "width", "height"):
            out[name].append(getattr(facts, name))
        out["boxes"].append(json.dumps([asdict(box) for box in facts.boxes]))
        out["patient_number"].append(facts.patient_number or "")  # in memory, never written
    return out


def ray_facts(paths: list[str], batch_size: int = 64) -> dict[str, FileFacts]:
    """``file_facts`` of ``paths`` read on Ray Data: ``{path: FileFacts}``."""
    import ray

    if not paths:
        return {}
    dataset = ray.data.read_binary_files(paths, include_paths=True).map_batches(
        _facts_batch, batch_size=batch_size, batch_format="numpy"
    )
    return {
        str(row["path"]): FileFacts(
            str(row["sha256"]),
            int(row["size"]),
            str(row["problem"]),
            int(row["width"]),
            int(row["height"]),
            tuple(RawBox(**box) for box in json.loads(str(row["boxes"]))),
            str(row["patient_number"]) or None,
        )
        for row in dataset.iter_rows()
    }


def _read_facts_on_ray(jobs: list[tuple[str, Kind]]) -> list[FileFacts]:
    """The ``FactsReader`` of ``index_source`` that reads the files on Ray."""
    found = ray_facts([path for path, _ in jobs])
    return [found[path] for path, _ in jobs]


def index_and_hash_ray(
    root: Path, cache_path: Path, *, decode: Decode = "draft"
) -> tuple[list[SourceRecord], Hashes]:
    """Read the files and hash the films on Ray, settle with the local index and hash steps.

    Ray must already be initialised (``ray.init(address=...)``) by the caller. The file facts
    go to ``cache_path`` with the suffix ``.facts.parquet``.
    """
    facts_path = cache_path.with_suffix(".facts.parquet")
    records = drop_augmented_by_name(
        index_source(root, cache_path=facts_path, reader=_read_facts_on_ray)
    )
    version = AverageHash512(decode).version
    cache = read_cache(cache_path, version)
    todo = sorted({f.path for f in pending_images(records) if f.sha256 not in cache})
    cache.update(ray_hashes([str(root / p) for p in todo], decode))
    write_cache(cache_path, version, cache)
    return hash_films(root, records, decode=decode, workers=1, cache_path=cache_path)
