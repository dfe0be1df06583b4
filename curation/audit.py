"""``pericurate audit TARGET``: a reviewer's check that published splits do not leak.

Nothing stored is trusted: every hash is recomputed from the image bytes. Rows are read one
parquet batch at a time and only the codes, labels and referral fields are kept, so memory is
bounded by the hash table, not by the images.

Checks: cross-split pairs within the threshold (512-bit average hash; with ``--method``,
also 64-bit ``phash``/``dhash`` from imagehash at the threshold scaled to their width,
``round(threshold * 64 / 512)``, i.e. 4 bits for the default 30), exact duplicates (same
bytes; same decoded pixels), stored cluster ids against the recomputed look-alike components,
groups spanning splits, clinical hint terms in referrals, and a permutation test of
association between each referral field and the labels.
"""

from __future__ import annotations

import hashlib
import io
import re
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import faiss
import networkx as nx
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import typer
from huggingface_hub import snapshot_download
from PIL import Image
from rich.console import Console

from curation.audit_referrals import Association, HintHit, associations, find_hints
from curation.audit_report import hashing_progress, print_summary, write_report
from curation.audit_turned import TurnedPair, turned_same_picture
from curation.hashing import HASH_BYTES, AverageHash512, Decode, View, short_hashes
from curation.lookalikes import LOOKALIKE_DISTANCE
from curation.pairs import as_codes, range_pairs, self_pairs

METHODS = ("ahash", "phash", "dhash")
SHORT_HASH_BITS = 64
KNOWN_SPLITS = ("train", "validation", "test")
DEFAULT_PERMUTATIONS = 9999
CLOSEST_PAIRS = 24
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


@dataclass(frozen=True)
class Pair:
    method: str
    distance: int
    a: int  # film index, earlier split
    b: int


@dataclass
class Audit:
    """Everything the report shows; ``findings`` empty means clean."""

    target: str
    shards: list[Path]
    columns: dict[str, str | None]
    films: list[Film]
    splits: list[str]
    thresholds: dict[str, int]
    hash_version: str
    pairs: list[Pair]
    turned: list[TurnedPair]
    closest: list[Pair]
    nearest: dict[str, list[int]]
    same_bytes: list[list[int]]
    same_pixels: list[list[int]]
    clusters: dict[str, Any] | None
    groups: dict[str, Any] | None
    hints: list[HintHit]
    associations: list[Association]
    permutations: int
    seed: int
    findings: list[str] = field(default_factory=list)

    def image_bytes(self, film: Film) -> bytes:
        """The image bytes of one film, read back from its shard (for thumbnails)."""
        shard = self.shards[film.shard]
        reader = pq.ParquetFile(shard)
        offset = 0
        for group in range(reader.num_row_groups):
            rows = reader.metadata.row_group(group).num_rows
            if film.row < offset + rows:
                table = reader.read_row_group(group, columns=[self.columns["image"]])
                return _image_bytes(table.column(0)[film.row - offset].as_py(), str(shard))
            offset += rows
        raise AuditError(f"{shard}: row {film.row} is missing on re-read.")


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


def _resolve_columns(shards: list[Path], columns: Columns) -> dict[str, str | None]:
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


def _image_bytes(value: Any, where: str) -> bytes:
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
            data = _image_bytes(values[names["image"]], where)
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


# --- leakage checks -----------------------------------------------------------------------


def order_splits(splits: set[str]) -> list[str]:
    """train, validation, test first, then any other split by name."""
    return [s for s in KNOWN_SPLITS if s in splits] + sorted(splits - set(KNOWN_SPLITS))


def method_threshold(method: str, threshold: int) -> int:
    """Thresholds are given in bits of 512; 64-bit hashes use the same fraction."""
    if method == "ahash":
        return threshold
    return round(threshold * SHORT_HASH_BITS / (HASH_BYTES * 8))


def _codes(films: list[Film], members: list[int], method: str) -> np.ndarray:
    if method == "ahash":
        return as_codes([films[i].codes[method] for i in members])
    width = SHORT_HASH_BITS // 8
    joined = b"".join(films[i].codes[method] for i in members)
    return np.frombuffer(joined, dtype=np.uint8).reshape(len(members), width)


def _members(films: list[Film], splits: list[str]) -> dict[str, list[int]]:
    members: dict[str, list[int]] = {s: [] for s in splits}
    for index, film in enumerate(films):
        members[film.split].append(index)
    return members


def cross_split_pairs(
    films: list[Film], splits: list[str], method: str, max_distance: int
) -> list[Pair]:
    """Every pair of films in different splits at distance <= ``max_distance``."""
    members = _members(films, splits)
    pairs = []
    for i, first in enumerate(splits):
        for second in splits[i + 1 :]:
            indexed = _codes(films, members[first], method)
            queries = _codes(films, members[second], method)
            for block in range_pairs(indexed, queries, max_distance):
                for q, r, d in block.tolist():
                    pairs.append(Pair(method, d, members[first][r], members[second][q]))
    return _sorted_pairs(films, pairs)


def _sorted_pairs(films: list[Film], pairs: list[Pair]) -> list[Pair]:
    return sorted(
        set(pairs), key=lambda p: (p.distance, p.method, films[p.a].film_id, films[p.b].film_id)
    )


def _search(indexed: np.ndarray, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    index = faiss.IndexBinaryFlat(indexed.shape[1] * 8)
    index.add(indexed)
    return index.search(queries, k)


def closest_pairs(films: list[Film], splits: list[str], count: int = CLOSEST_PAIRS) -> list[Pair]:
    """The ``count`` closest cross-split pairs by average hash, flagged or not."""
    members = _members(films, splits)
    pairs = []
    for i, first in enumerate(splits):
        for second in splits[i + 1 :]:
            if not members[first] or not members[second]:
                continue
            k = min(count, len(members[first]))
            distances, labels = _search(
                _codes(films, members[first], "ahash"), _codes(films, members[second], "ahash"), k
            )
            for q, (row_d, row_l) in enumerate(
                zip(distances.tolist(), labels.tolist(), strict=True)
            ):
                for d, r in zip(row_d, row_l, strict=True):
                    pairs.append(Pair("ahash", d, members[first][r], members[second][q]))
    return _sorted_pairs(films, pairs)[:count]


def nearest_to_train(films: list[Film], splits: list[str]) -> dict[str, list[int]]:
    """For each split other than train, each film's nearest average-hash distance to train."""
    members = _members(films, splits)
    train = members.get("train", [])
    nearest = {}
    for split in splits:
        if split == "train" or not train or not members[split]:
            continue
        distances, _ = _search(
            _codes(films, train, "ahash"), _codes(films, members[split], "ahash"), 1
        )
        nearest[split] = sorted(distances[:, 0].tolist())
    return nearest


def same_content(films: list[Film], key: Callable[[Film], str]) -> list[list[int]]:
    """Groups of two or more films with equal ``key``, sorted."""
    groups: dict[str, list[int]] = defaultdict(list)
    for index, film in enumerate(films):
        groups[key(film)].append(index)
    return sorted(g for g in groups.values() if len(g) > 1)


def spans_splits(films: list[Film], group: list[int]) -> bool:
    return len({films[i].split for i in group}) > 1


def _spanning(films: list[Film], groups: dict[str, set[int]]) -> list[dict[str, Any]]:
    return [
        {"id": gid, "splits": order_splits({films[i].split for i in members})}
        for gid, members in sorted(groups.items())
        if len({films[i].split for i in members}) > 1
    ]


def _grouped(films: list[Film], key: Callable[[Film], str | None]) -> dict[str, set[int]]:
    groups: dict[str, set[int]] = defaultdict(set)
    for index, film in enumerate(films):
        groups[str(key(film))].add(index)
    return groups


def check_clusters(films: list[Film], threshold: int) -> dict[str, Any]:
    """Stored cluster ids against the look-alike components recomputed over all films, in
    every orientation. The curator may also have joined films on evidence a reviewer cannot
    see (one patient), so stored clusters may be coarser: each recomputed component must lie
    within one stored cluster ("consistent"); "equal" says whether they are the same."""
    graph = nx.Graph()
    graph.add_nodes_from(range(len(films)))
    codes = _codes(films, list(range(len(films))), "ahash")
    graph.add_edges_from((i, j) for i, j, _ in self_pairs(codes, threshold).tolist())
    for view in View:
        if view is not View.identity and films:
            turned = as_codes([f.turned[view.value] for f in films])
            for block in range_pairs(turned, codes, threshold):
                graph.add_edges_from((i, j) for i, j, _ in block.tolist() if i != j)
    recomputed = {frozenset(c) for c in nx.connected_components(graph)}
    stored = _grouped(films, lambda f: f.cluster)
    stored_sets = {frozenset(m) for m in stored.values()}
    unmatched = [
        {
            "films": sorted(films[i].film_id for i in component),
            "stored_ids": sorted({str(films[i].cluster) for i in component}),
        }
        for component in recomputed
        if len({films[i].cluster for i in component}) > 1
    ]
    return {
        "stored": len(stored),
        "recomputed": len(recomputed),
        "equal": recomputed == stored_sets,
        "consistent": not unmatched,
        "unmatched_components": sorted(unmatched, key=lambda u: u["films"]),
        "spanning": _spanning(films, stored),
    }


def check_groups(films: list[Film]) -> dict[str, Any]:
    """Groups (e.g. patients) must each sit in one split."""
    groups = _grouped(films, lambda f: f.group)
    return {"groups": len(groups), "spanning": _spanning(films, groups)}


# --- the whole audit ----------------------------------------------------------------------


def findings(audit: Audit) -> list[str]:
    """One sentence per kind of leakage or hint found; empty when clean."""
    found = []
    for method, limit in audit.thresholds.items():
        count = sum(p.method == method for p in audit.pairs)
        if count:
            found.append(f"{count} cross-split pairs at {method} distance <= {limit}.")
    if audit.turned:
        found.append(
            f"{len(audit.turned)} cross-split pairs are the same picture mirrored or turned "
            "(pixel-confirmed)."
        )
    for kind, groups in (("bytes", audit.same_bytes), ("decoded pixels", audit.same_pixels)):
        crossing = sum(spans_splits(audit.films, g) for g in groups)
        if crossing:
            found.append(f"{crossing} groups of films with the same {kind} span two splits.")
    if audit.clusters is not None:
        if not audit.clusters["consistent"]:
            found.append(
                f"{len(audit.clusters['unmatched_components'])} recomputed look-alike "
                "components are split over several stored clusters."
            )
        if audit.clusters["spanning"]:
            found.append(f"{len(audit.clusters['spanning'])} stored clusters span two splits.")
    if audit.groups is not None and audit.groups["spanning"]:
        found.append(f"{len(audit.groups['spanning'])} groups span two splits.")
    if audit.hints:
        found.append(f"{len(audit.hints)} clinical hint terms found in referrals.")
    for test in audit.associations:
        if test.flagged:
            found.append(
                f"Referral field {test.field} is associated with {test.label} "
                f"(Bonferroni p = {test.p_adjusted:.4g})."
            )
    return found


def run_audit(
    target: str,
    columns: Columns = Columns(),
    threshold: int = LOOKALIKE_DISTANCE,
    methods: tuple[str, ...] = ("ahash",),
    permutations: int = DEFAULT_PERMUTATIONS,
    seed: int = 0,
    decode: Decode = "draft",
    on_start: Callable[[int], None] | None = None,
    on_film: Callable[[], None] | None = None,
) -> Audit:
    """Read the target, recompute every hash and run every check."""
    unknown = sorted(set(methods) - set(METHODS))
    if unknown:
        raise AuditError(f"Unknown hash method {unknown[0]!r}; choose from {', '.join(METHODS)}.")
    methods = tuple(m for m in METHODS if m in {"ahash", *methods})
    shards = find_shards(resolve_target(target))
    names = _resolve_columns(shards, columns)
    if on_start:
        on_start(count_rows(shards))
    hasher = AverageHash512(decode)
    films = scan(shards, names, hasher, methods, on_film)
    splits = order_splits({f.split for f in films})
    if len(splits) < 2:
        raise AuditError(
            f"{target}: found only the split {splits[0] if splits else '(none)'}; name the files "
            "train-/validation-/test-... or pass --split-column."
        )
    thresholds = {m: method_threshold(m, threshold) for m in methods}
    pairs = [p for m in methods for p in cross_split_pairs(films, splits, m, thresholds[m])]
    audit = Audit(
        target=target,
        shards=shards,
        columns=names,
        films=films,
        splits=splits,
        thresholds=thresholds,
        hash_version=hasher.version,
        pairs=_sorted_pairs(films, pairs),
        turned=[],
        closest=closest_pairs(films, splits),
        nearest=nearest_to_train(films, splits),
        same_bytes=same_content(films, lambda f: f.sha256),
        same_pixels=same_content(films, lambda f: f.pixels),
        clusters=check_clusters(films, threshold) if names["cluster"] else None,
        groups=check_groups(films) if names["group"] else None,
        hints=find_hints(films),
        associations=associations(films, permutations, seed),
        permutations=permutations,
        seed=seed,
    )
    audit.turned = turned_same_picture(
        [f.split for f in films],
        [f.codes["ahash"] for f in films],
        [f.turned for f in films],
        lambda index: audit.image_bytes(films[index]),
    )
    audit.findings = findings(audit)
    return audit


# --- the command --------------------------------------------------------------------------


def audit_command(
    target: Annotated[
        str, typer.Argument(help="Build folder, folder of parquet files, or OWNER/NAME@REVISION.")
    ],
    image_column: Annotated[str, typer.Option(help="Column holding the image.")] = "image",
    split_column: Annotated[
        str | None, typer.Option(help="Column naming the split (default: from file names).")
    ] = None,
    label_column: Annotated[
        str | None, typer.Option(help="Label column (default: 'lesions' if present).")
    ] = None,
    cluster_column: Annotated[
        str | None, typer.Option(help="Look-alike cluster ids (default: 'cluster_id').")
    ] = None,
    group_column: Annotated[
        str | None, typer.Option(help="Groups that must stay in one split, e.g. patients.")
    ] = None,
    id_column: Annotated[
        str | None, typer.Option(help="Film id column (default: 'film_id' if present).")
    ] = None,
    referral_column: Annotated[
        str | None, typer.Option(help="Referral struct or text (default: 'referral').")
    ] = None,
    threshold: Annotated[
        int, typer.Option(help="Look-alike distance in bits of 512 (scaled for 64-bit hashes).")
    ] = LOOKALIKE_DISTANCE,
    method: Annotated[
        list[str] | None, typer.Option(help="Also flag pairs by ahash, phash or dhash.")
    ] = None,
    decode: Annotated[str, typer.Option(help="Average hash decoding: draft or full.")] = "draft",
    out: Annotated[Path, typer.Option(help="Folder for report.json, report.html, nearest.png.")] = (
        Path("audit")
    ),
    seed: Annotated[int, typer.Option(help="Seed of the permutation tests.")] = 0,
    permutations: Annotated[
        int, typer.Option(help="Permutations per association test.")
    ] = DEFAULT_PERMUTATIONS,
) -> None:
    """Audit published splits for look-alike leakage and referral hints (exit 1 if found)."""
    console = Console(stderr=True)
    columns = Columns(
        image_column,
        split_column,
        label_column,
        cluster_column,
        group_column,
        id_column,
        referral_column,
    )
    try:
        if decode not in ("draft", "full"):
            raise AuditError(f"--decode must be 'draft' or 'full', not {decode!r}.")
        if permutations < 1:
            raise AuditError("--permutations must be at least 1.")
        with hashing_progress(console) as (on_start, on_film):
            audit = run_audit(
                target,
                columns,
                threshold,
                tuple(method or ()),
                permutations,
                seed,
                decode,  # type: ignore[arg-type]
                on_start,
                on_film,
            )
        write_report(audit, out)
    except AuditError as error:
        console.print(str(error), style="red", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None
    print_summary(audit, out, console)
    raise typer.Exit(1 if audit.findings else 0)
