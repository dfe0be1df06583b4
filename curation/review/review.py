"""The review page: nobody can check the real archive's same-picture and look-alike decisions
by hand here, so the build writes a static page that whoever runs it can read at a glance.
For every same-picture group and every multi-film look-alike cluster it shows which films,
which split they went to and why (kind, evidence, distance against its limit, margin), and
how many films each rule took out of the dataset; decisions near their limit come first.

Static files only (``index.html`` and ``thumbs/``), no script and no external URL, so the page
works from ``file://``. It is rendered by Jinja2 from ``templates/review.html`` with
autoescaping on: film ids come from file names in a downloaded archive. A thumbnail's file
name is derived from its id, never trusted as a path. The same inputs give the same bytes.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from networkx.utils import UnionFind

from curation.core.atomic import write_bytes
from curation.core.parallel import ordered_map
from curation.hashes.thumbnails import Thumbnail, film_thumbnail
from curation.review.pages import render_page


@dataclass(frozen=True)
class ReviewMember:
    film_id: str
    kept: bool
    kind: str  # "" for the kept film; else mirror | rotation | rescaled | noised | re-filing
    view: str  # identity | mirror | rot90 | rot180 | rot270: how the kept film turns into this one
    hash_distance: int  # bits, in that view
    difference: float  # pixel difference after photometric correction (grey levels)
    limit: float  # the same-picture limit that difference was compared with
    evidence: str  # one sentence: why this film is the copy (or kept)


@dataclass(frozen=True)
class ReviewGroup:
    kept: str
    members: tuple[ReviewMember, ...]  # the dropped films (kept film not repeated)


@dataclass(frozen=True)
class ReviewLink:
    first: str
    second: str
    reason: str  # e.g. "hash distance 27 (mirror)" or "same patient number"
    distance: int | None  # bits, None for a patient link
    limit: int  # the look-alike limit (30)


@dataclass(frozen=True)
class ReviewCluster:
    cluster_id: str
    film_ids: tuple[str, ...]
    links: tuple[ReviewLink, ...]


@dataclass(frozen=True)
class RuleCounts:
    """How many source films each rule kept out of the dataset."""

    folder_rule: int = 0  # filed as an augmented copy (folder and stem rule)
    same_picture: int = 0  # the same picture as a kept film
    bad_file: int = 0  # rejected: unreadable, corrupt, a bomb, no annotation, ...


class ReviewError(ValueError):
    """The records handed to the page contradict themselves (a bug upstream, not bad luck)."""


CLOSE = 0.8  # a measurement using this much of its limit is a near-limit decision (red)
KIND_ORDER = ("mirror", "rotation", "rescaled", "noised", "re-filing")
SPLIT_ORDER = ("train", "validation", "test")
NO_SPLIT = "no split"  # a film the page was given no split for
# Ids that are already a harmless file name keep it, so a reviewer can find a film's thumbnail.
_PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def bits(n: int) -> str:
    return f"{n} bit" if n == 1 else f"{n} bits"


def _thumb_name(film_id: str) -> str:
    """A file name that cannot leave ``thumbs/`` whatever the id holds ("../", "/", NUL)."""
    if _PLAIN_NAME.fullmatch(film_id):
        return f"{film_id}.jpg"
    return f"_{hashlib.sha256(film_id.encode('utf-8', 'surrogatepass')).hexdigest()[:20]}.jpg"


def _ratio(what: str, value: float, limit: float) -> float:
    """How much of its limit a measurement used: 1.0 sits on the threshold."""
    if not (math.isfinite(value) and math.isfinite(limit) and limit > 0):
        raise ReviewError(
            f"The {what} has measurement {value!r} against limit {limit!r}; "
            "both must be finite and the limit positive."
        )
    return value / limit


def _member_ratio(member: ReviewMember) -> float:
    return _ratio(f"film {member.film_id!r}", member.difference, member.limit)


def _group_ratio(group: ReviewGroup) -> float:
    """A group is as close a call as its closest dropped film."""
    for member in group.members:
        if member.kept or member.film_id == group.kept:
            raise ReviewError(
                f"Group {group.kept!r} lists {member.film_id!r} as kept among its dropped films."
            )
    return max(map(_member_ratio, group.members), default=0.0)


def _link_ratio(link: ReviewLink) -> float:
    """Patient links count as 0: a shared patient number links films whatever the hash says."""
    if link.distance is None:
        return 0.0
    return _ratio(f"link {link.first!r}-{link.second!r}", link.distance, link.limit)


def _kruskal_order(link: ReviewLink) -> tuple[bool, float, str, str, str]:
    """Patient links first (they hold whatever the hash says), then hash links by ratio."""
    return (link.distance is not None, _link_ratio(link), link.first, link.second, link.reason)


def _display_order(link: ReviewLink) -> tuple[bool, float, str, str, str]:
    """Hash links closest to the limit first, patient links after them."""
    return (link.distance is None, -_link_ratio(link), link.first, link.second, link.reason)


def _needed_links(cluster: ReviewCluster) -> list[ReviewLink]:
    """The links of a minimum spanning forest (Kruskal, patient links first): those the
    cluster needs. Any other link joins films already joined, so it decides nothing."""
    films = UnionFind(cluster.film_ids)
    members = set(cluster.film_ids)
    needed = []
    for link in sorted(cluster.links, key=_kruskal_order):
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


def _deciding_link(needed: list[ReviewLink]) -> ReviewLink | None:
    """The weakest link the cluster needs: lowering the limit below it would split the
    cluster (the largest of all links does not say so when links form cycles). None when
    patient links alone hold the cluster together."""
    return next((link for link in reversed(needed) if link.distance is not None), None)


Thumbs = dict[str, Thumbnail | str]  # film id -> thumbnail, or why there is none


class _View:
    """Turns the records into the plain values the template shows (numbers as text)."""

    def __init__(self, thumbs: Thumbs, split_of: Mapping[str, str]) -> None:
        self.thumbs = thumbs
        self.split_of = split_of

    def split(self, films: tuple[str, ...] | list[str]) -> str:
        return ", ".join(sorted({self.split_of.get(film, NO_SPLIT) for film in films}))

    def figure(self, film_id: str, role: str) -> dict[str, Any]:
        thumb = self.thumbs[film_id]
        if isinstance(thumb, str):
            return {"film": film_id, "role": role, "missing": thumb}
        width, height = thumb.size
        src = "thumbs/" + quote(_thumb_name(film_id))
        return {"film": film_id, "role": role, "src": src, "width": width, "height": height}

    def group(self, number: int, group: ReviewGroup) -> dict[str, Any]:
        members = sorted(group.members, key=lambda m: (-_member_ratio(m), m.film_id))
        split = self.split([group.kept])
        ratio = _group_ratio(group)
        return {
            "anchor": f"group-{number}",
            "number": number,
            "kept": group.kept,
            "split": split,
            "ratio": ratio,
            "close": ratio >= CLOSE,
            "kinds": ", ".join(sorted({m.kind for m in members})),
            "figure": self.figure(group.kept, f"kept, {split}"),
            "members": [self.member(m, group.kept) for m in members],
        }

    def member(self, member: ReviewMember, kept: str) -> dict[str, Any]:
        ratio = _member_ratio(member)
        return {
            "figure": self.figure(member.film_id, f"dropped: the same picture as {kept}"),
            "kind": member.kind,
            "view": member.view,
            "distance": bits(member.hash_distance),
            "difference": f"{member.difference:.2f}",
            "limit": f"{member.limit:.2f}",
            "ratio": ratio,
            "close": ratio >= CLOSE,
            "margin": f"{member.limit - member.difference:.2f}",
            "evidence": member.evidence,
        }

    def cluster(
        self, number: int, cluster: ReviewCluster, needed: list[ReviewLink]
    ) -> dict[str, Any]:
        deciding = _deciding_link(needed)
        split = self.split(cluster.film_ids)
        ratio = _link_ratio(deciding) if deciding else 0.0
        if deciding is None:
            held = "held by patient links only"
        else:
            held = f"weakest needed link {deciding.distance} of {bits(deciding.limit)}"
        return {
            "anchor": f"cluster-{number}",
            "number": number,
            "cluster_id": cluster.cluster_id,
            "films": len(cluster.film_ids),
            "split": split,
            "ratio": ratio,
            "close": ratio >= CLOSE,
            "held": held,
            "deciding": deciding is not None,
            "figures": [self.figure(f, self.split([f])) for f in sorted(cluster.film_ids)],
            "links": [
                self.link(link, deciding, link in needed)
                for link in sorted(cluster.links, key=_display_order)
            ],
        }

    @staticmethod
    def link(link: ReviewLink, deciding: ReviewLink | None, needed: bool) -> dict[str, Any]:
        if link.distance is None:
            css, measure = "patient", "patient link (no threshold)"
        else:
            measure = f"{link.distance} of {bits(link.limit)} (margin {link.limit - link.distance})"
            css = "deciding" if link is deciding else "hash" if needed else "redundant"
        role = {
            "deciding": "weakest needed link",
            "hash": "needed",
            "patient": "needed" if needed else "not needed: films already joined",
            "redundant": "not needed: films already joined",
        }[css]
        return {
            "first": link.first,
            "second": link.second,
            "css": css,
            "measure": measure,
            "role": role,
            "reason": link.reason,
        }


def _summary(
    groups: list[dict[str, Any]],
    clusters: list[dict[str, Any]],
    raw_groups: list[ReviewGroup],
    split_of: Mapping[str, str],
    rules: RuleCounts | None,
    missing: int,
) -> list[tuple[str, str]]:
    """The counts a reviewer checks first against the build's own summary."""
    kinds = Counter(m.kind for g in raw_groups for m in g.members)
    ordered = [k for k in KIND_ORDER if k in kinds] + sorted(set(kinds) - set(KIND_ORDER))
    by_kind = ", ".join(f"{kind} {kinds[kind]}" for kind in ordered) or "none"
    splits = Counter(split_of.values())
    order = [s for s in SPLIT_ORDER if s in splits] + sorted(set(splits) - set(SPLIT_ORDER))
    rows = []
    if splits:
        rows.append(("films in the dataset", ", ".join(f"{s} {splits[s]}" for s in order)))
    if rules is not None:
        rows += [
            ("dropped by the folder rule (augmented copies)", str(rules.folder_rule)),
            ("dropped as the same picture as a kept film", f"{rules.same_picture} ({by_kind})"),
            ("rejected as bad files", str(rules.bad_file)),
        ]
    else:
        rows.append(("dropped as the same picture as a kept film", f"{kinds.total()} ({by_kind})"))
    return [
        *rows,
        ("same-picture groups", str(len(groups))),
        ("multi-film look-alike clusters", str(len(clusters))),
        ("films in those clusters", str(sum(c["films"] for c in clusters))),
        ("clusters held by patient links only", str(sum(not c["deciding"] for c in clusters))),
        ("thumbnails unavailable", str(missing)),
    ]


def write_review_page(
    out_dir: Path,
    groups: list[ReviewGroup],
    clusters: list[ReviewCluster],
    image_path: Callable[[str], Path],
    *,
    title: str,
    synthetic: bool,
    split_of: Mapping[str, str] | None = None,
    rules: RuleCounts | None = None,
    workers: int = 0,
    known: Callable[[list[str]], Mapping[str, Thumbnail]] = lambda films: {},
    decisions: list[str] | None = None,
) -> Path:
    """Write ``out_dir/index.html`` and its thumbnails; return the page's path.

    ``split_of`` maps each kept film to its split; ``rules`` says how many films each rule
    dropped. Groups are ordered by their largest difference/limit, clusters by their weakest
    needed link's distance/limit (clusters held by patient links alone last), closest call
    first, ties by id; decisions at ``CLOSE`` of their limit or more are listed first of all.
    Thumbnails are written before the page and stale ones removed after it, each file
    atomically, so a reader never meets a page pointing at a missing thumbnail.
    ``known(film ids)`` gives the thumbnails already made (the hash step's, by film id); the
    others are made here over ``workers`` processes (0: one per core). ``decisions``: the
    curator's (``BUILD/decisions.toml``), one sentence each, listed after the summary."""
    split_of = dict(split_of or {})
    groups = sorted(groups, key=lambda g: (-_group_ratio(g), g.kept))
    decided = [(c, _needed_links(c)) for c in clusters if len(c.film_ids) > 1]
    decided.sort(key=lambda c: (-_ratio_of(c[1]), _deciding_link(c[1]) is None, c[0].cluster_id))
    films = [g.kept for g in groups] + [m.film_id for g in groups for m in g.members]
    films += [film for c, _ in decided for film in c.film_ids]
    shown = list(dict.fromkeys(films))
    found = known(shown)
    thumbs: Thumbs = {film: found[film] for film in shown if film in found}
    missing = [film for film in shown if film not in thumbs]
    made_here = ordered_map(film_thumbnail, [image_path(film) for film in missing], workers)
    thumbs |= zip(missing, made_here, strict=True)
    thumb_dir = out_dir / "thumbs"
    for film in shown:
        thumb = thumbs[film]
        if not isinstance(thumb, str):
            write_bytes(thumb_dir / _thumb_name(film), thumb.jpeg)
    view = _View(thumbs, split_of)
    group_views = [view.group(i, g) for i, g in enumerate(groups, 1)]
    cluster_views = [view.cluster(i, c, needed) for i, (c, needed) in enumerate(decided, 1)]
    near = sorted(
        (d for d in [*group_views, *cluster_views] if d["close"]),
        key=lambda d: (-d["ratio"], d["anchor"]),
    )
    unavailable = sum(isinstance(thumb, str) for thumb in thumbs.values())
    page = render_page(
        "review.html",
        title=title,
        synthetic=synthetic,
        close=CLOSE,
        summary=_summary(group_views, cluster_views, groups, split_of, rules, unavailable),
        near=near,
        groups=group_views,
        clusters=cluster_views,
        decisions=decisions or [],
    )
    index = out_dir / "index.html"
    write_bytes(index, page.encode("utf-8"))
    kept_names = {_thumb_name(film) for film, thumb in thumbs.items() if not isinstance(thumb, str)}
    if thumb_dir.is_dir():
        for stale in sorted(thumb_dir.iterdir()):
            if stale.is_file() and stale.name not in kept_names:
                stale.unlink()
    return index


def _ratio_of(needed: list[ReviewLink]) -> float:
    deciding = _deciding_link(needed)
    return _link_ratio(deciding) if deciding else 0.0
