"""Reading an audit target: a build, a folder of parquet shards or a Hub revision, one parquet
row group at a time, keeping per film only its codes and small fields (``Film``), never the
image. A row group is the unit of per-file work (``row_groups``, ``read_images``): each worker
reads its own row group's images, so no image crosses between processes and memory stays
bounded by a row group per worker; the hashing of every row is ``curation.leaks.scan``."""

from __future__ import annotations

import hashlib
import io
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import simplejpeg
from huggingface_hub import snapshot_download
from PIL import Image

from curation.core.jpeg_check import check_decodable, decode_failure
from curation.hashes.hashing import HASH_BYTES, View

IMAGES_AT_ONCE = 16  # image cells decoded from a row group at a time
TURNED_VIEWS = tuple(view for view in View if view is not View.identity)  # ``Film.turned``'s order
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


@dataclass(slots=True)
class Film:
    """What the audit keeps of one row: codes and small fields, never the image. Compact,
    as the audit holds one per row (docs/scale.md, "The audit on two nodes"): slots (no
    dictionary of attributes), the codes as plain bytes (no dictionary of codes), the
    values every row repeats (split, header) shared."""

    film_id: str
    split: str
    shard: int
    row: int
    sha256: str
    pixels: str | None  # sha256 of the decoded pixels; only where cheaper keys collide
    ahash: bytes  # the 512-bit average hash, upright
    turned: bytes = b""  # the 512-bit codes of ``TURNED_VIEWS``, one after the other
    short: dict[str, bytes] | None = None  # ``--method`` phash/dhash: method -> 64-bit code
    lesions: int | None = None
    grades: tuple[int, ...] = ()
    label: Any = None
    cluster: str | None = None
    group: str | None = None
    referral: dict[str, Any] | None = None
    header: str = ""  # mode and size, from the image header: equal for equal pixels

    def code(self, method: str) -> bytes:
        """The film's code by ``method`` (``ahash``, or a ``--method`` it was hashed by)."""
        return self.ahash if method == "ahash" else (self.short or {})[method]

    def turned_code(self, view: str) -> bytes:
        """The 512-bit code of the film turned by ``view`` (one of ``TURNED_VIEWS``)."""
        at = TURNED_VIEWS.index(View(view)) * HASH_BYTES
        return self.turned[at : at + HASH_BYTES]


@dataclass(frozen=True)
class RowGroup:
    """One row group of one shard: the unit of work of the scan."""

    shard: int
    path: Path
    group: int
    first_row: int
    rows: int


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
        raise AuditError(_download_problem(target, error)) from None
    return Path(folder)


def _download_problem(target: str, error: Exception) -> str:
    """One sentence for a Hub download that failed: unreachable (no network, offline mode,
    nothing cached), no such dataset or revision, or the Hub's own answer."""
    from huggingface_hub import constants, errors

    if isinstance(error, errors.LocalEntryNotFoundError | errors.OfflineModeIsEnabled | OSError):
        return (
            f"{target}: the Hub at {constants.ENDPOINT} cannot be reached (no network, or "
            "offline mode) and no copy of that revision is cached, so it cannot be audited."
        )
    if isinstance(error, errors.RevisionNotFoundError):
        return f"{target}: the Hub has that dataset but no such revision."
    if isinstance(error, errors.RepositoryNotFoundError):
        return f"{target}: no such dataset on the Hub (or it is private and no token allows it)."
    if isinstance(error, errors.HfHubHTTPError) and error.response is not None:
        return f"{target}: the Hub answered HTTP {error.response.status_code} to the download."
    return f"{target}: could not download the dataset at that revision ({type(error).__name__})."


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
    """The image bytes of a parquet image cell (bytes, or a dict holding them);
    ``AuditError`` naming ``where`` when it holds none."""
    if isinstance(value, dict):
        value = value.get("bytes")
    if not isinstance(value, bytes | bytearray):
        raise AuditError(f"{where}: the image cell holds no image bytes.")
    return bytes(value)


def image_header(image: Image.Image) -> str:
    """An image's mode and size as text: a film's recorded header, and the start of its
    pixels digest."""
    return f"{image.mode}:{image.size[0]}x{image.size[1]}:"


# JPEG modes that simplejpeg decodes to Pillow's own pixels, and the colour space it names.
_SIMPLEJPEG_SPACE = {"L": "GRAY", "RGB": "RGB"}


def pixels_digest(data: bytes) -> str:
    """sha256 of the header and the pixels decoded at full size: equal only for equal pixels.

    A grey or colour JPEG that decodes cleanly is decoded by simplejpeg straight into an array
    (the same libjpeg-turbo pixels as Pillow's, ``tests/leaks/test_identical.py`` compares
    the digests), at about two fifths of the cost of Pillow's decode and ``tobytes`` copy;
    any other image, or a JPEG with warnings, is decoded by Pillow as before."""
    with Image.open(io.BytesIO(data)) as image:
        header = image_header(image).encode()
        space = _SIMPLEJPEG_SPACE.get(image.mode) if image.format == "JPEG" else None
        if space and check_decodable(data) is None:
            try:
                pixels = simplejpeg.decode_jpeg(data, colorspace=space, strict=True)
            except ValueError:
                pass  # libjpeg warned: Pillow decodes it, as before
            else:
                digest = hashlib.sha256(header)
                digest.update(pixels)
                return digest.hexdigest()
        image.load()
        return hashlib.sha256(header + image.tobytes()).hexdigest()


def row_groups(shards: list[Path]) -> list[RowGroup]:
    """Every row group of every shard, in order, with the shard row it starts at."""
    found = []
    for index, path in enumerate(shards):
        metadata = pq.ParquetFile(path).metadata
        first = 0
        for group in range(metadata.num_row_groups):
            rows = metadata.row_group(group).num_rows
            found.append(RowGroup(index, path, group, first, rows))
            first += rows
    return found


def row_group_key(job: RowGroup) -> str:
    """A row group by its shard's path, size and modification time (no film's sha256), for
    what the audit keeps of it: reading 27.5 GB to key it by content would cost what the
    hashing costs."""
    stat = job.path.stat()
    where = f"{job.path.resolve()}\n{stat.st_size}\n{stat.st_mtime_ns}\n{job.group}"
    return hashlib.sha256(where.encode()).hexdigest()


def read_images(
    job: RowGroup, image: str, rows: tuple[int, ...], work: Callable[[bytes], Any]
) -> list[Any]:
    """``work`` of the image of each of ``rows`` (shard rows) of one row group, in order; an
    image that cannot be decoded is one sentence naming its shard and row."""
    wanted = set(rows)
    done: dict[int, Any] = {}
    for row, cell in _image_cells(job.path, job.group, job.first_row, image):
        if row not in wanted:
            continue
        where = f"{job.path} row {row}"
        data = image_bytes_of(cell, where)
        try:
            done[row] = work(data)
        except (OSError, ValueError, Image.DecompressionBombError) as error:
            raise AuditError(
                f"{where}: the image cannot be decoded ({decode_failure(error)})."
            ) from None
        if len(done) == len(wanted):
            break
    return [done[row] for row in rows]


def read_image(path: Path, row: int, image: str) -> bytes:
    """The image bytes of one shard row, read a batch at a time up to it."""
    metadata = pq.ParquetFile(path).metadata
    first = 0
    for group in range(metadata.num_row_groups):
        rows = metadata.row_group(group).num_rows
        if row < first + rows:
            for at, cell in _image_cells(path, group, first, image):
                if at == row:
                    return image_bytes_of(cell, f"{path} row {row}")
        first += rows
    raise AuditError(f"{path}: row {row} is missing on re-read.")


def _image_cells(path: Path, group: int, first_row: int, image: str) -> Iterator[tuple[int, Any]]:
    """Each shard row of one row group with its image cell, ``IMAGES_AT_ONCE`` decoded at a
    time: a row group holding thousands of copies of one image (stored once, dictionary
    encoded) would take gigabytes read whole."""
    reader = pq.ParquetFile(path)
    row = first_row
    batches = reader.iter_batches(batch_size=IMAGES_AT_ONCE, row_groups=[group], columns=[image])
    for batch in batches:
        for cell in batch.column(0).to_pylist():
            yield row, cell
            row += 1


def count_rows(shards: list[Path]) -> int:
    """The rows of every shard, read from their footers alone."""
    return sum(pq.ParquetFile(s).metadata.num_rows for s in shards)
