"""The audit's hashes kept a row group a file (``curation.leaks.scan.hash_store``): a scan that
finds a row group's hashes reads them instead of hashing its rows, to the same films, every
method's codes included; a kept file that is not what the scan writes is hashed again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from curation.hashes.hashing import AverageHash512
from curation.leaks import scan as scan_module
from curation.leaks.scan import hash_store, scan
from curation.leaks.target import Columns, find_shards, resolve_columns
from tests.audit.test_audit_at_scale import FILMS, write_target

METHODS = ("ahash", "phash", "dhash")


def in_process(function: Any, jobs: Any, chunksize: int = 1) -> Any:
    return map(function, jobs)


GROUP_ROWS = 4  # ``write_target``'s row groups


def test_kept_hashes_are_read_back_as_the_films_and_a_damaged_file_is_hashed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    shards = find_shards(write_target(tmp_path / "target"))
    names = resolve_columns(shards, Columns())
    hasher = AverageHash512()
    kept = hash_store(tmp_path / "work", hasher, METHODS, "image")
    first = scan(shards, names, hasher, METHODS, map=in_process, kept=kept)
    assert first == scan(shards, names, hasher, METHODS, map=in_process)  # keeping changes no film
    assert all(f.short and set(f.short) == {"phash", "dhash"} for f in first)
    files = sorted(kept.folder.rglob("*.arrays"))
    assert len(files) == 2 * -(-FILMS // GROUP_ROWS)  # a file a row group

    hashed: list[Any] = []
    hash_film = scan_module.hash_film
    monkeypatch.setattr(
        scan_module, "hash_film", lambda *a, **k: hashed.append(1) or hash_film(*a, **k)
    )
    assert scan(shards, names, hasher, METHODS, map=in_process, kept=kept) == first
    assert hashed == []

    group = kept.get(files[0].stem)
    assert group is not None
    rows = len(group["sha256"])  # 4, or 2 for a shard's last group
    kept.put(files[0].stem, {"sha256": np.zeros((rows, 32), np.uint8)})  # no codes
    assert scan(shards, names, hasher, METHODS, map=in_process, kept=kept) == first
    assert len(hashed) == rows
