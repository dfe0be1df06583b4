"""The review page's records: the decisions a curator checks (same-picture groups, look-alike
clusters, rejected files) as plain values, and how close each decision came to its limit, so
the page can put the closest calls first."""

from __future__ import annotations

import math
from dataclasses import dataclass

from networkx.utils import UnionFind


@dataclass(frozen=True)
class ReviewMember:
    """A film of a same-picture group as the page shows it, with the measurement that
    decided it."""

    film_id: str
    kept: bool
    kind: str  # "" for the kept film; else mirror | rotation | rescaled | noised | re-filing
    view: str  # identity | mirror | rot90 | rot180 | rot270: how the kept film turns into this one
    hash_distance: int  # bits, in that view
    difference: float  # pixel difference after photometric correction (grey levels)
    limit: float  # the same-picture limit that difference was compared with
    evidence: str  # one sentence: why this film is the copy (or kept)
    framed: bool = False  # confirmed under another frame: the page draws its matched features


@dataclass(frozen=True)
class ReviewGroup:
    """A same-picture group: the kept film and the films dropped as its copies."""

    kept: str
    members: tuple[ReviewMember, ...]  # the dropped films (kept film not repeated)


@dataclass(frozen=True)
class ReviewLink:
    """A link that joined two films of a look-alike cluster."""

    first: str
    second: str
    reason: str  # e.g. "hash distance 27 (mirror)" or "same patient number"
    distance: int | None  # bits, None for a patient link
    limit: int  # the look-alike limit (30)
    visit: bool = False  # a visit verified by local features: the page draws them


@dataclass(frozen=True)
class ReviewCluster:
    """A look-alike cluster: its films and the links between them."""

    cluster_id: str
    film_ids: tuple[str, ...]
    links: tuple[ReviewLink, ...]


@dataclass(frozen=True)
class RuleCounts:
    """How many source films each rule kept out of the dataset."""

    folder_rule: int = 0  # filed as an augmented copy (folder and stem rule)
    same_picture: int = 0  # the same picture as a kept film
    bad_file: int = 0  # rejected: unreadable, corrupt, a bomb, no annotation, ...


@dataclass(frozen=True)
class RejectedFile:
    """A source file the build refused, with the reason the manifest records."""

    path: str
    kind: str  # image | annotation | other
    reason: str


class ReviewError(ValueError):
    """The records handed to the page contradict themselves (a bug upstream, not bad luck)."""


CLOSE = 0.8  # a measurement using this much of its limit is a near-limit decision (red)
KIND_ORDER = ("mirror", "rotation", "rescaled", "noised", "re-filing")
SPLIT_ORDER = ("train", "validation", "test")
NO_SPLIT = "no split"  # a film the page was given no split for


def bits(n: int) -> str:
    """A hash distance in words: ``1 bit``, ``n bits``."""
    return f"{n} bit" if n == 1 else f"{n} bits"


def limit_ratio(what: str, value: float, limit: float) -> float:
    """How much of its limit a measurement used: 1.0 sits on the threshold."""
    if not (math.isfinite(value) and math.isfinite(limit) and limit > 0):
        raise ReviewError(
            f"The {what} has measurement {value!r} against limit {limit!r}; "
            "both must be finite and the limit positive."
        )
    return value / limit


def member_ratio(member: ReviewMember) -> float:
    """How much of the same-picture limit a dropped film's difference used."""
    return limit_ratio(f"film {member.film_id!r}", member.difference, member.limit)


def group_ratio(group: ReviewGroup) -> float:
    """A group is as close a call as its closest dropped film."""
    for member in group.members:
        if member.kept or member.film_id == group.kept:
            raise ReviewError(
                f"Group {group.kept!r} lists {member.film_id!r} as kept among its dropped films."
            )
    return max(map(member_ratio, group.members), default=0.0)


def link_ratio(link: ReviewLink) -> float:
    """Patient links count as 0: a shared patient number links films whatever the hash says."""
    if link.distance is None:
        return 0.0
    return limit_ratio(f"link {link.first!r}-{link.second!r}", link.distance, link.limit)


def kruskal_order(link: ReviewLink) -> tuple[bool, float, str, str, str]:
    """Patient links first (they hold whatever the hash says), then hash links by ratio."""
    return (link.distance is not None, link_ratio(link), link.first, link.second, link.reason)


def display_order(link: ReviewLink) -> tuple[bool, float, str, str, str]:
    """Hash links closest to the limit first, patient links after them."""
    return (link.distance is None, -link_ratio(link), link.first, link.second, link.reason)


def needed_links(cluster: ReviewCluster) -> list[ReviewLink]:
    """The links of a minimum spanning forest (Kruskal, patient links first): those the
    cluster needs. Any other link joins films already joined, so it decides nothing."""
    films = UnionFind(cluster.film_ids)
    members = set(cluster.film_ids)
    needed = []
    for link in sorted(cluster.links, key=kruskal_order):
        if not {link.first, link.second} <= members:
            raise ReviewError(
                f"Cluster {cluster.cluster_id!r} lists a link between {link.first!r} and "
                f"{link.second!r}, which are not both among its films."
            )
        if films[link.first] != films[link.second]:
            films.union(link.first, link.second)
            needed.append(link)
    if len({films[film] for film in cluster.film_ids}) > 1:
        raise ReviewError(f"Cluster {cluster.cluster_id!r} has films no listed link connects.")
    return needed


def deciding_link(needed: list[ReviewLink]) -> ReviewLink | None:
    """The weakest link the cluster needs: lowering the limit below it would split the
    cluster (the largest of all links does not say so when links form cycles). None when
    patient links alone hold the cluster together."""
    return next((link for link in reversed(needed) if link.distance is not None), None)


def cluster_ratio(needed: list[ReviewLink]) -> float:
    """A cluster is as close a call as the weakest link it needs (0: patient links only)."""
    deciding = deciding_link(needed)
    return link_ratio(deciding) if deciding else 0.0
