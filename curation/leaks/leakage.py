"""The audit's leakage checks over the films read from a target, and the findings they give."""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from curation.core.parallel import Mapper
from curation.core.vocabulary import VisitSearch
from curation.hashes.hashing import HASH_BYTES, View
from curation.hashes.mapped_pairs import mapped_range_pairs
from curation.hashes.orientations import mapped_pairs_in_any_orientation
from curation.hashes.pairs import as_codes
from curation.leaks.nearest import SplitSearches, split_members
from curation.leaks.referrals import Association, HintHit
from curation.leaks.target import Film, read_image
from curation.leaks.turned import TurnedPair
from curation.leaks.visits import CrossSplitMatch
from curation.publish.schema import SPLITS as KNOWN_SPLITS
from curation.visits.verification import VisitEvidence

SHORT_HASH_BITS = 64
CLOSEST_PAIRS = 24
NAMED = 5  # reused film ids a finding names; the report lists them all


@dataclass(frozen=True)
class Pair:
    """Two films in different splits found close by ``method``, ``distance`` apart."""

    method: str
    distance: int
    a: int  # film index, earlier split
    b: int


READ_BACK_KEPT = 256  # images: a visit check's pairs and their drawings, about 0.1 GB


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
    # Film ids that name rows of more than one split (``reused_ids``).
    reused_ids: list[dict[str, Any]] = field(default_factory=list)
    # Films standing for others of their split with the same bytes, and how many films each
    # stands for (more than one): pairs, turned pairs and visits are found between such
    # representatives (``curation.leaks.identical.representatives``) and counted for all.
    copies: dict[int, int] = field(default_factory=dict)
    # Cross-split pairs verified by local features (``curation.leaks.visits``): visits of
    # one patient, and copies under another frame; the feature matches, for the drawings.
    visits: list[CrossSplitMatch] = field(default_factory=list)
    visit_fits: dict[tuple[int, int], VisitEvidence] = field(default_factory=dict)
    # How the visit check searched the pairs it verified.
    visit_search: VisitSearch = VisitSearch.lists
    # Findings set aside by the curator's decisions (``curation.audit.decided``), one each.
    decision_notes: list[str] = field(default_factory=list)
    # Images read back, by (shard, row): the visit check's pairs are read again for their
    # drawings, and each read costs a whole row group of the shard.
    _read_back: Callable[[int, int], bytes] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._read_back = functools.lru_cache(maxsize=READ_BACK_KEPT)(self._read_image)

    def weight(self, a: int, b: int) -> int:
        """The film pairs one pair of representatives stands for."""
        return self.copies.get(a, 1) * self.copies.get(b, 1)

    @property
    def pair_count(self) -> int:
        """The cross-split film pairs flagged, copies counted."""
        return sum(self.weight(p.a, p.b) for p in self.pairs)

    @property
    def patient_visits(self) -> list[CrossSplitMatch]:
        """The cross-split visits of one patient (not the same picture)."""
        return [v for v in self.visits if not v.same_picture]

    def image_bytes(self, film: Film) -> bytes:
        """The image bytes of one film, read back from its shard (for thumbnails, drawings
        and the aligned checks); the last ``READ_BACK_KEPT`` are kept."""
        return self._read_back(film.shard, film.row)

    def _read_image(self, shard_index: int, row: int) -> bytes:
        image = self.columns["image"]
        assert image is not None
        return read_image(self.shards[shard_index], row, image)


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
        return as_codes([films[i].code(method) for i in members])
    width = SHORT_HASH_BITS // 8
    joined = b"".join(films[i].code(method) for i in members)
    return np.frombuffer(joined, dtype=np.uint8).reshape(len(members), width)


def cross_split_pairs(
    films: list[Film],
    splits: list[str],
    method: str,
    max_distance: int,
    folder: Path,
    map: Mapper | None = None,
) -> list[Pair]:
    """Every pair of films in different splits at distance <= ``max_distance``, each pair of
    splits one search through ``map`` (``mapped_range_pairs``), its codes below ``folder``."""
    members = split_members(films, splits)
    pairs = []
    for i, first in enumerate(splits):
        for second in splits[i + 1 :]:
            indexed = _codes(films, members[first], method)
            queries = _codes(films, members[second], method)
            (rows,) = mapped_range_pairs(indexed, [queries], max_distance, folder, map)
            for q, r, d in rows.tolist():
                pairs.append(Pair(method, d, members[first][r], members[second][q]))
    return sorted_pairs(films, pairs)


def sorted_pairs(films: list[Film], pairs: list[Pair]) -> list[Pair]:
    """``pairs`` without repeats, closest first, then by method and film ids, so a
    report lists them in the same order on every run."""
    return sorted(
        set(pairs), key=lambda p: (p.distance, p.method, films[p.a].film_id, films[p.b].film_id)
    )


def closest_pairs(
    films: list[Film], splits: list[str], searches: SplitSearches, count: int = CLOSEST_PAIRS
) -> list[Pair]:
    """The ``count`` closest cross-split pairs by average hash, flagged or not, from
    ``searches`` (``curation.leaks.nearest.split_searches`` with at least ``count``). Only
    the results within a search's ``count``-th smallest distance can be among the closest,
    so only they become pairs (at 1,000,000 films the searches give 7.2 million)."""
    members = split_members(films, splits)
    pairs = []
    for (first, second), (distances, labels) in searches.items():
        kept = min(count, distances.size)
        bound = np.partition(distances, kept - 1, axis=None)[kept - 1]
        for q, rank in zip(*np.nonzero(distances <= bound), strict=True):  # in search order
            d, r = int(distances[q, rank]), int(labels[q, rank])
            pairs.append(Pair("ahash", d, members[first][r], members[second][int(q)]))
    return sorted_pairs(films, pairs)[:count]


def nearest_to_train(searches: SplitSearches) -> dict[str, list[int]]:
    """For each split other than train, each film's nearest average-hash distance to train:
    the first column of the searches from train (train comes first, ``order_splits``)."""
    return {
        later: sorted(distances[:, 0].tolist())
        for (earlier, later), (distances, _) in searches.items()
        if earlier == "train"
    }


def same_content(films: list[Film], key: Callable[[Film], str | None]) -> list[list[int]]:
    """Groups of two or more films with equal ``key`` (films without one are left out)."""
    groups: dict[str, list[int]] = defaultdict(list)
    for index, film in enumerate(films):
        value = key(film)
        if value is not None:
            groups[value].append(index)
    return sorted(g for g in groups.values() if len(g) > 1)


def reused_ids(films: list[Film]) -> list[dict[str, Any]]:
    """Film ids that name rows of more than one split, with those splits: a test row filed
    under a train row's id is a leak whatever its image (a join by id mixes the splits), and
    the hashes cannot see it when the images differ."""
    splits_of: dict[str, set[str]] = defaultdict(set)
    for film in films:
        splits_of[film.film_id].add(film.split)
    return [
        {"film_id": film_id, "splits": order_splits(splits)}
        for film_id, splits in sorted(splits_of.items())
        if len(splits) > 1
    ]


def spans_splits(films: list[Film], group: list[int]) -> bool:
    """Whether the films of ``group`` (indices into ``films``) sit in more than one split."""
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


def check_clusters(
    films: list[Film], threshold: int, rep_of: list[int], folder: Path, map: Mapper | None = None
) -> dict[str, Any]:
    """Stored cluster ids against the look-alike components recomputed over all films, in
    every orientation. The curator may also have joined films on evidence a reviewer cannot
    see (one patient), so stored clusters may be coarser: each recomputed component must lie
    within one stored cluster ("consistent"); "equal" says whether they are the same.
    Films are searched through their representatives (``rep_of``), each copy joined to its
    own: the components are those of searching every film. The search runs through ``map``
    (``mapped_pairs_in_any_orientation``), its codes below ``folder``."""
    graph = nx.Graph()
    graph.add_nodes_from(range(len(films)))
    graph.add_edges_from((i, r) for i, r in enumerate(rep_of) if i != r)
    reps = sorted(set(rep_of))

    def codes_in(view: View) -> np.ndarray:
        if view is View.identity:
            return _codes(films, reps, "ahash")
        return as_codes([films[i].turned_code(view.value) for i in reps])

    for _, rows in mapped_pairs_in_any_orientation(codes_in, threshold, View, folder, map):
        graph.add_edges_from((reps[i], reps[j]) for i, j, _ in rows.tolist())
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
    if audit.reused_ids:
        named = ", ".join(
            f"{r['film_id']!r} ({' and '.join(r['splits'])})" for r in audit.reused_ids[:NAMED]
        )
        more = len(audit.reused_ids) - NAMED
        found.append(
            f"{len(audit.reused_ids)} film ids name rows in more than one split: {named}"
            + (f" and {more} more." if more > 0 else ".")
        )
    for method, limit in audit.thresholds.items():
        count = sum(audit.weight(p.a, p.b) for p in audit.pairs if p.method == method)
        if count:
            found.append(f"{count} cross-split pairs at {method} distance <= {limit}.")
    reframed = sum(audit.weight(v.a, v.b) for v in audit.visits if v.same_picture)
    if reframed:
        found.append(
            f"{reframed} cross-split pairs are the same picture under another frame (cropped, "
            "padded, turned a few degrees or re-toned; feature- and pixel-confirmed)."
        )
    negatives = sum(audit.weight(p.a, p.b) for p in audit.turned if p.negative)
    turned = sum(audit.weight(p.a, p.b) for p in audit.turned if not p.negative)
    if turned:
        found.append(
            f"{turned} cross-split pairs are the same picture mirrored or turned (pixel-confirmed)."
        )
    if negatives:
        found.append(
            f"{negatives} cross-split pairs are the same picture with its grey levels inverted "
            "(a negative; pixel-confirmed)."
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
