"""The run summary, ``curation.json``: what a build read, with which parameters, and what it
made of it. One typed record, made from the steps' products by ``summarize`` and written by
the build step, read back by the card, the push and the command line, so that none of them
reads it by string keys.

The JSON is ``dataclasses.asdict`` of ``Summary`` with sorted keys (``curation.core.atomic``): the
field names below are the file's keys, and equal builds give equal bytes (no timestamps).
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import types
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Any,
    ClassVar,
    Protocol,
    TypeVar,
    Union,
    get_args,
    get_origin,
    get_type_hints,
)

from curation.core.atomic import write_json
from curation.core.build_origin import SAMPLE_COMMENT
from curation.core.errors import PericurateError
from curation.source.source import SOURCE_CITATION, SOURCE_DOI, SOURCE_LICENSE
from splits.figures import Figures

if TYPE_CHECKING:
    from curation.core.records import SourceRecord
    from curation.keeper.step import KeptGroups
    from curation.lookalikes.components import Cluster, Lookalikes
    from curation.same_picture.detect import ConfirmedPairs
    from curation.source.source import Source
    from splits.assign import SplitTargets

VERSIONED_PACKAGES = (  # the packages whose versions curation.json records
    "pericurate",
    "datasets",
    "faiss-cpu",
    "imagehash",
    "networkx",
    "numpy",
    "pillow",
    "pyarrow",
)


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
    """A look-alike cluster and how many films it holds."""

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
    """What ``curation.json`` records of a build: source, settings, split targets, counts,
    figures and versions."""

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
        """Write the summary to ``path`` atomically, ``decisions`` left out without any."""
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


@dataclass(frozen=True)
class Made:
    """What the steps made that the summary counts: their products, by the steps' names for
    them (``curation.chain.chain.CHAIN``)."""

    records: list[SourceRecord]
    same_picture_pairs: ConfirmedPairs
    kept_groups: KeptGroups
    lookalikes: Lookalikes
    split_targets: SplitTargets


def summarize(
    source: Source,
    parameters: dict[str, dict[str, Any]],
    hash_version: str,
    made: Made,
    kept: dict[str, list[SourceRecord]],
    decisions: dict[str, Any] | None = None,
) -> Summary:
    """What ``curation.json`` records of a run.

    Args:
        source: the source the run read.
        parameters: each configured step's settings, by step name (``Settings.record``).
        hash_version: the hash step's version string (its decode and algorithm).
        made: the steps' products the summary counts.
        kept: the kept films by split.
        decisions: the curator's decisions, when the build has a decisions file.

    Returns:
        The summary, ready to ``save``.
    """
    from curation.core.records import fate_counts, reason_class

    records, lookalikes, groups = made.records, made.lookalikes, made.kept_groups
    reasons = Counter((r.kind.value, r.fate.value, reason_class(r.reason)) for r in records)
    hash_links = [link for link in lookalikes.links if link.method == "ahash"]
    clusters = lookalikes.clusters
    return Summary(
        source=SourceFacts(
            source.origin,
            source.sha256,
            source.size,
            source.comment,
            source.comment == SAMPLE_COMMENT,
            SOURCE_CITATION,
            SOURCE_DOI,
            SOURCE_LICENSE,
        ),
        parameters=parameters,
        hash_version=hash_version,
        targets=made.split_targets.films,
        counts=Counts(
            source_files=len(records),
            by_kind_and_fate={f"{k}/{f}": n for (k, f), n in sorted(fate_counts(records).items())},
            by_reason=tuple(ReasonCount(*key, n) for key, n in sorted(reasons.items())),
            same_picture_candidates=made.same_picture_pairs.candidates,
            same_picture_groups=len(groups.groups),
            same_picture_dropped=dict(
                sorted(Counter(d.kind for g in groups.groups for d in g.dropped).items())
            ),
            agreement_pairs=len(groups.agreement),
            lookalike_edges=len(hash_links),
            lookalike_edges_turned=sum(1 for link in hash_links if link.view != "identity"),
            patient_links=len(lookalikes.patient_links),
            films_with_template_patient_number=lookalikes.templated,
            clusters=len(clusters),
            multi_film_clusters=sum(1 for c in clusters if len(c.film_ids) > 1),
            largest_clusters=tuple(_size(c) for c in clusters[:5]),
            verified_visits=len(lookalikes.visit_links),
            visits_across_splits=_visits_across(lookalikes, kept),
        ),
        splits={split: split_figures(films) for split, films in kept.items()},
        versions=_versions(),
        decisions=decisions,
    )


def split_figures(films: Iterable[SourceRecord]) -> Figures:
    """The films, lesions and grades of ``films``, counted."""
    return Figures.of((lesion.pai for lesion in film.lesions) for film in films)


def _visits_across(lookalikes: Lookalikes, kept: dict[str, list[SourceRecord]]) -> int:
    """Verified visits whose two films were assigned to different splits."""
    split = {film.film_id: name for name, films in kept.items() for film in films}
    return sum(split.get(v.first) != split.get(v.second) for v in lookalikes.visit_links)


def _size(cluster: Cluster) -> ClusterSize:
    return ClusterSize(cluster.cluster_id, len(cluster.film_ids))


def _versions() -> dict[str, str]:
    versions = {}
    for name in VERSIONED_PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


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
