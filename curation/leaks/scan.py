"""Hashing every row of an audit target, a row group per job (``scan``): each worker reads its
own row group's images (``curation.leaks.target.read_images``) and returns each film's codes,
sha256 and header; the driver reads the small columns beside them and keeps a ``Film`` a row.

A row group's results are kept below the audit's work folder when it has one (``hash_store``):
at 1,000,000 rows the hashing took about 13 minutes on two nodes, and an audit that stops
midway hashes again only the row groups it had not. A row group is known by its shard's path,
size and modification time; the store's version names the hash, the methods and the image
column, so a changed file or another hash is hashed anew.
"""

from __future__ import annotations

import hashlib
import io
import json
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
from PIL import Image

from curation.core.parallel import LocalMap, Mapper
from curation.core.store import Arrays, ArrayStore
from curation.hashes.hashing import HASH_BYTES, AverageHash512, View, short_hashes
from curation.leaks.target import (
    TURNED_VIEWS,
    Film,
    RowGroup,
    image_header,
    read_images,
    row_group_key,
    row_groups,
    split_from_name,
)

SHORT_METHODS = ("phash", "dhash")  # 64-bit codes of imagehash, beside the average hash
HASHES_FOLDER = "hashes"  # below the audit's work folder


def hash_film(data: bytes, hasher: AverageHash512, methods: tuple[str, ...]) -> dict[str, Any]:
    """sha256 of the bytes, the header (mode and size) and each method's code; the pixels are
    not decoded at full size here (``pixels_digest`` does it where it is needed)."""
    with Image.open(io.BytesIO(data)) as image:
        header = image_header(image)
    grey = hasher.open_grey(io.BytesIO(data))
    views = hasher.hash_grey_views(grey)
    short = None
    if set(SHORT_METHODS) & set(methods):
        codes = short_hashes(grey)
        short = {m: codes[m] for m in SHORT_METHODS if m in methods}
    return {
        "sha256": hashlib.sha256(data).hexdigest(),
        "header": header,
        "ahash": views[View.identity],
        "turned": b"".join(views[v] for v in TURNED_VIEWS),
        "short": short,
    }


def hash_store(
    work: Path, hasher: AverageHash512, methods: tuple[str, ...], image: str
) -> ArrayStore:
    """The store of the row groups' hashes below the work folder ``work``."""
    return ArrayStore(work / HASHES_FOLDER, f"{hasher.version}/{','.join(methods)}/{image}")


def _as_arrays(hashed: list[dict[str, Any]], methods: tuple[str, ...]) -> Arrays:
    """A row group's hashes as the store's arrays (the headers as UTF-8 JSON)."""

    def rows(codes: list[bytes], width: int) -> np.ndarray:
        return np.frombuffer(b"".join(codes), np.uint8).reshape(len(codes), width)

    arrays = {
        "sha256": rows([bytes.fromhex(h["sha256"]) for h in hashed], 32),
        "ahash": rows([h["ahash"] for h in hashed], HASH_BYTES),
        "turned": rows([h["turned"] for h in hashed], HASH_BYTES * len(TURNED_VIEWS)),
        "headers": np.frombuffer(json.dumps([h["header"] for h in hashed]).encode(), np.uint8),
    }
    for method in (m for m in SHORT_METHODS if m in methods):
        arrays[method] = rows([h["short"][method] for h in hashed], 8)
    return arrays


def _from_arrays(arrays: Arrays, methods: tuple[str, ...]) -> list[dict[str, Any]]:
    """The hashes ``_as_arrays`` stored, as ``hash_film`` returns them."""
    shorts = [m for m in SHORT_METHODS if m in methods]
    headers = json.loads(arrays["headers"].tobytes())
    return [
        {
            "sha256": arrays["sha256"][n].tobytes().hex(),
            "header": str(header),
            "ahash": arrays["ahash"][n].tobytes(),
            "turned": arrays["turned"][n].tobytes(),
            "short": {m: arrays[m][n].tobytes() for m in shorts} if shorts else None,
        }
        for n, header in enumerate(headers)
    ]


def _hash_group(
    job: RowGroup,
    image: str,
    hasher: AverageHash512,
    methods: tuple[str, ...],
    kept: ArrayStore | None,
) -> list[dict[str, Any]]:
    """Worker side: ``hash_film`` of each row of one row group, read from ``kept`` when it
    holds them whole, else computed (and kept)."""
    rows = tuple(range(job.first_row, job.first_row + job.rows))
    hash_rows = partial(
        read_images, job, image, rows, partial(hash_film, hasher=hasher, methods=methods)
    )
    if kept is None:
        return hash_rows()
    key = row_group_key(job)
    stored = kept.get(key)
    if stored is not None:
        try:
            found = _from_arrays(stored, methods)
        except (KeyError, IndexError, ValueError):  # not what ``_as_arrays`` writes: again
            found = []
        if len(found) == job.rows:
            return found
    hashed = hash_rows()
    kept.put(key, _as_arrays(hashed, methods))
    return hashed


def _labels(value: Any) -> dict[str, Any]:
    """Lesion count and grades from a list label; a scalar label is kept as it is."""
    if isinstance(value, list):
        grades = []
        for item in value:
            if isinstance(item, dict):
                grade = item.get("pai", item.get("grade"))
                if isinstance(grade, int):
                    grades.append(grade)
        return {"lesions": len(value), "grades": tuple(grades)}
    return {"label": value}


def scan(
    shards: list[Path],
    names: dict[str, str | None],
    hasher: AverageHash512,
    methods: tuple[str, ...],
    on_films: Callable[[int], None] | None = None,
    map: Mapper | None = None,
    kept: ArrayStore | None = None,
) -> list[Film]:
    """Hash every row of every shard, a row group per job through ``map`` (default: one
    process per core), telling ``on_films`` how many rows each group held; the small columns
    are read here, beside the results. Each row group's hashes are kept in ``kept``
    (``hash_store``) when given, and read from it on the next scan."""
    image = names["image"]
    assert image is not None
    wanted = sorted({n for key, n in names.items() if n and key != "image"})
    jobs = row_groups(shards)
    work = partial(_hash_group, image=image, hasher=hasher, methods=methods, kept=kept)
    films: list[Film] = []
    hashed_groups = (map or LocalMap())(work, jobs, chunksize=1)
    for job, hashed in zip(jobs, hashed_groups, strict=True):
        if wanted:
            table = pq.ParquetFile(job.path).read_row_group(job.group, columns=wanted)
            rows = table.to_pylist()
        else:
            rows = [{} for _ in range(job.rows)]
        for offset, (values, film) in enumerate(zip(rows, hashed, strict=True)):
            films.append(_film(job, job.first_row + offset, values, film, names))
        if on_films:
            on_films(len(rows))
    return films


def _film(
    job: RowGroup,
    row: int,
    values: dict[str, Any],
    hashed: dict[str, Any],
    names: dict[str, str | None],
) -> Film:
    split = str(values[names["split"]]) if names["split"] else split_from_name(job.path)
    hashed = {**hashed, "header": sys.intern(hashed["header"])}  # one string for every row
    film_id = values[names["film_id"]] if names["film_id"] else None
    referral = values[names["referral"]] if names["referral"] else None
    if isinstance(referral, str):
        referral = {"text": referral}
    return Film(
        film_id=str(film_id) if film_id is not None else f"{split}:{row}",
        split=sys.intern(split),  # one string per split, not per row
        shard=job.shard,
        row=row,
        pixels=None,
        **hashed,
        **(_labels(values[names["label"]]) if names["label"] else {}),
        cluster=_text_or_none(values, names["cluster"]),
        group=_text_or_none(values, names["group"]),
        referral=referral,
    )


def _text_or_none(values: dict[str, Any], name: str | None) -> str | None:
    value = values[name] if name else None
    return None if value is None else str(value)
