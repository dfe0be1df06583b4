"""Reading an audit target: a build, a folder of parquet shards or a Hub revision, one parquet
batch at a time, keeping per film only its codes and small fields (``Film``), never the image."""

from __future__ import annotations

import hashlib
import io
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from huggingface_hub import snapshot_download
from PIL import Image

from curation.hashing import AverageHash512, View, short_hashes

BATCH_ROWS = 64
HUB_TARGET = re.compile(r"^(?P<repo>[\w.-]+/[\w.-]+)@(?P<revision>[\w./-]+)$")


class AuditError(Exception):
    """An audit that cannot run; the message is the one sentence the reviewer sees."""


@dataclass(frozen=True)
class Columns:
    """Column names; ``None`` for optional ones means "use the default name if present"."""

    image: str = "image"
    split: str | None = None
    label: str | None = None
    cluster: str | None = None
    group: str | None = None
    film_id: str | None = None
    referral: str | None = None


DEFAULT_OPTIONAL = {
    "label": "lesions",
    "cluster": "cluster_id",
    "film_id": "film_id",
    "referral": "referral",
}


@dataclass
class Film:
    """What the audit keeps of one row: codes and small fields, never the image."""

    film_id: str
    split: str
    shard: int
    row: int
    sha256: str
    pixels: str
    codes: dict[str, bytes]
    turned: dict[str, bytes] = field(default_factory=dict)  # view -> 512-bit code
    lesions: int | None = None
    grades: tuple[int, ...] = ()
    label: Any = None
    cluster: str | None = None
    group: str | None = None
    referral: dict[str, Any] | None = None


# --- reading the target -------------------------------------------------------------------


def resolve_target(target: str) -> Path:
    """A local folder, or ``OWNER/NAME@REVISION`` downloaded at that revision."""
    local = Path(target)
    if local.exists():
        if not local.is_dir():
            raise AuditError(f"{target}: the target must be a folder, not a file.")
        return local
    hub = HUB_TARGET.match(target)
    if not hub:
        raise AuditError(
            f"{target}: no such folder, and not a Hub dataset of the form OWNER/NAME@REVISION."
        )
    try:
        folder = snapshot_download(
            hub["repo"],
            repo_type="dataset",
            revision=hub["revision"],
            allow_patterns=["*.parquet"],
        )
    except Exception as error:
        raise AuditError(
            f"{target}: could not download the dataset at that revision ({type(error).__name__})."
        ) from None
    return Path(folder)


def find_shards(folder: Path) -> list[Path]:
    """The parquet shards: ``dataset/data`` of a build, ``data`` of a repo, else all below."""
    for data in (folder / "dataset" / "data", folder / "data"):
        if data.is_dir():
            folder = data
            break
    shards = sorted(p for p in folder.rglob("*.parquet") if not p.name.startswith("."))
    if not shards:
        raise AuditError(f"{folder}: no parquet files found.")
    return shards


def split_from_name(path: Path) -> str:
    """``train-00000-of-00001.parquet`` -> ``train`` (the Hub's shard naming)."""
    return re.split(r"[-.]", path.name, maxsplit=1)[0]


def resolve_columns(shards: list[Path], columns: Columns) -> dict[str, str | None]:
    """Check named columns exist in every shard; optional defaults are used where present."""
    names: dict[str, str | None] = {"image": columns.image, "split": columns.split}
    for key, default in DEFAULT_OPTIONAL.items():
        names[key] = getattr(columns, key) or default
    names["group"] = columns.group
    required = {"image", "split"} | {k for k in DEFAULT_OPTIONAL if getattr(columns, k)}
    required |= {"group"} if columns.group else set()
    for shard in shards:
        try:
            present = set(pq.read_schema(shard).names)
        except (OSError, pa.ArrowException) as error:
            raise AuditError(f"{shard}: not a readable parquet file ({error}).") from None
        for key, name in list(names.items()):
            if name is None or name in present:
                continue
            if key in required:
                raise AuditError(f"{shard}: no column '{name}' (the {key} column).")
            names[key] = None
    return names


def image_bytes_of(value: Any, where: str) -> bytes:
    if isinstance(value, dict):
        value = value.get("bytes")
    if not isinstance(value, bytes | bytearray):
        raise AuditError(f"{where}: the image cell holds no image bytes.")
    return bytes(value)


def hash_film(data: bytes, hasher: AverageHash512, methods: tuple[str, ...]) -> dict[str, Any]:
    """sha256 of the bytes, sha256 of the decoded pixels and each method's code."""
    with Image.open(io.BytesIO(data)) as image:
        image.load()
        header = f"{image.mode}:{image.size[0]}x{image.size[1]}:".encode()
        pixels = hashlib.sha256(header + image.tobytes()).hexdigest()
    grey = hasher.open_grey(io.BytesIO(data))
    views = hasher.hash_grey_views(grey)
    codes = {"ahash": views[View.identity]}
    turned = {v.value: code for v, code in views.items() if v is not View.identity}
    if {"phash", "dhash"} & set(methods):
        short = short_hashes(grey)
        codes.update({m: short[m] for m in ("phash", "dhash") if m in methods})
    return {
        "sha256": hashlib.sha256(data).hexdigest(),
        "pixels": pixels,
        "codes": codes,
        "turned": turned,
    }


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


def _rows(shard: Path, names: list[str]) -> Iterator[dict[str, Any]]:
    reader = pq.ParquetFile(shard)
    for batch in reader.iter_batches(batch_size=BATCH_ROWS, columns=names):
        yield from batch.to_pylist()


def scan(
    shards: list[Path],
    names: dict[str, str | None],
    hasher: AverageHash512,
    methods: tuple[str, ...],
    on_film: Callable[[], None] | None = None,
) -> list[Film]:
    """Hash every row of every shard, one batch in memory at a time."""
    wanted = sorted({n for n in names.values() if n})
    films: list[Film] = []
    for index, shard in enumerate(shards):
        for row, values in enumerate(_rows(shard, wanted)):
            where = f"{shard} row {row}"
            data = image_bytes_of(values[names["image"]], where)
            try:
                hashed = hash_film(data, hasher, methods)
            except (OSError, ValueError, Image.DecompressionBombError) as error:
                raise AuditError(f"{where}: the image cannot be decoded ({error}).") from None
            split = str(values[names["split"]]) if names["split"] else split_from_name(shard)
            film_id = values[names["film_id"]] if names["film_id"] else None
            referral = values[names["referral"]] if names["referral"] else None
            if isinstance(referral, str):
                referral = {"text": referral}
            films.append(
                Film(
                    film_id=str(film_id) if film_id is not None else f"{split}:{row}",
                    split=split,
                    shard=index,
                    row=row,
                    **hashed,
                    **(_labels(values[names["label"]]) if names["label"] else {}),
                    cluster=_text_or_none(values, names["cluster"]),
                    group=_text_or_none(values, names["group"]),
                    referral=referral,
                )
            )
            if on_film:
                on_film()
    return films


def _text_or_none(values: dict[str, Any], name: str | None) -> str | None:
    value = values[name] if name else None
    return None if value is None else str(value)


def count_rows(shards: list[Path]) -> int:
    return sum(pq.ParquetFile(s).metadata.num_rows for s in shards)
