"""The run summary, ``curation.json``: what a build read, with which parameters, and what it
made of it. One typed record, written by the build step and read back by the card, the
push and the command line, so that none of them reads it by string keys.

The JSON is ``dataclasses.asdict`` of ``Summary`` with sorted keys (``curation.core.atomic``): the
field names below are the file's keys, and equal builds give equal bytes (no timestamps).
"""

from __future__ import annotations

import dataclasses
import json
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol, TypeVar, Union, get_args, get_origin, get_type_hints

from curation.core.atomic import write_json
from curation.core.errors import PericurateError
from splits.figures import Figures


class _Dataclass(Protocol):
    """Any dataclass (what ``dataclasses.fields`` takes)."""

    __dataclass_fields__: ClassVar[dict[str, Any]]


_D = TypeVar("_D", bound=_Dataclass)


class SummaryError(PericurateError):
    """``curation.json`` is missing or is not a summary this version writes."""


@dataclass(frozen=True)
class SourceFacts:
    """The source archive and how the data it holds must be credited."""

    origin: str
    archive_sha256: str | None
    archive_size: int | None
    archive_comment: str
    synthetic: bool  # the archive's comment says it is the synthetic sample
    citation: str
    doi: str
    license: str


@dataclass(frozen=True)
class ReasonCount:
    """How many files of one kind met one fate for one class of reason."""

    kind: str
    fate: str
    reason: str
    files: int


@dataclass(frozen=True)
class ClusterSize:
    cluster_id: str
    films: int


@dataclass(frozen=True)
class Counts:
    """What each step did, counted."""

    source_files: int
    by_kind_and_fate: dict[str, int]  # "image/kept" -> files
    by_reason: tuple[ReasonCount, ...]
    same_picture_candidates: int
    same_picture_groups: int
    same_picture_dropped: dict[str, int]  # kind of copy -> films
    agreement_pairs: int
    lookalike_edges: int
    lookalike_edges_turned: int
    patient_links: int
    films_with_template_patient_number: int
    clusters: int
    multi_film_clusters: int
    largest_clusters: tuple[ClusterSize, ...]  # the five largest, largest first
    verified_visits: int = 0  # pairs of kept films verified as visits of one patient
    visits_across_splits: int = 0  # of those, pairs whose films sit in different splits

    def files(self, kind: str, fate: str, reason: str) -> int:
        """Files of ``kind`` and ``fate`` whose reason is of the class ``reason`` (a
        ``curation.core.vocabulary.Reason``)."""
        return sum(
            row.files
            for row in self.by_reason
            if row.kind == kind and row.fate == fate and row.reason == reason
        )


@dataclass(frozen=True)
class Summary:
    source: SourceFacts
    parameters: dict[str, dict[str, Any]]  # step -> its config, as the run gave it
    hash_version: str
    targets: dict[str, int]  # split -> film target
    counts: Counts
    splits: dict[str, Figures]
    versions: dict[str, str]  # package -> version
    # The curator's decisions (``curation.decisions``): written only when the build had them.
    decisions: dict[str, Any] | None = None

    def flat_settings(self) -> types.SimpleNamespace:
        """Every recorded setting by its name (names are unique across steps)."""
        return types.SimpleNamespace(
            **{name: value for config in self.parameters.values() for name, value in config.items()}
        )

    def save(self, path: Path) -> None:
        recorded = dataclasses.asdict(self)
        if recorded["decisions"] is None:
            del recorded["decisions"]
        write_json(path, recorded)

    @classmethod
    def load(cls, path: Path) -> Summary:
        """The summary at ``path``; ``SummaryError`` when it is missing or not one."""
        if not path.is_file():
            raise SummaryError(f"{path}: no curation summary; run `pericurate build` first.")
        try:
            return _dataclass_from(cls, json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise SummaryError(
                f"{path}: not a curation summary ({type(error).__name__}: {error}); "
                "run `pericurate build` again."
            ) from None


def _dataclass_from(kind: type[_D], value: Any) -> _D:
    """``value`` read from JSON as the dataclass ``kind``, field by field."""
    if not isinstance(value, dict):
        raise TypeError(f"{kind.__name__} must be an object, not {type(value).__name__}")
    hints = get_type_hints(kind)
    fields = dataclasses.fields(kind)
    return kind(
        **{
            f.name: _typed(hints[f.name], value[f.name])
            for f in fields
            if f.name in value or f.default is dataclasses.MISSING
        }
    )


def _typed(kind: Any, value: Any) -> Any:
    """``value`` read from JSON as ``kind``: dataclasses field by field, tuples and dicts item
    by item, plain values checked against their type."""
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        return _dataclass_from(kind, value)
    if kind is Any:
        return value
    origin, args = get_origin(kind), get_args(kind)
    if origin is tuple:
        items = _checked(value, list)
        kinds = [args[0]] * len(items) if args[-1] is Ellipsis else list(args)
        if len(kinds) != len(items):
            raise ValueError(f"{len(items)} items where {len(kinds)} belong")
        return tuple(_typed(k, v) for k, v in zip(kinds, items, strict=True))
    if origin is dict:
        return {str(k): _typed(args[1], v) for k, v in _checked(value, dict).items()}
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        return _typed(next(a for a in args if a is not type(None)), value)
    if kind is type(None):
        return _checked(value, type(None))
    if kind is float:
        return float(_checked(value, (int, float)))
    return _checked(value, kind)


def _checked(value: Any, kind: type | tuple[type, ...]) -> Any:
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise TypeError(f"unexpected {type(value).__name__} value {value!r}")
    return value
