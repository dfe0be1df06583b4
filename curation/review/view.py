"""The review page's records turned into the plain values its template shows (numbers as text):
each decision once, each film's thumbnail opening an enlarged view, and the values each row
offers the page's filters (split, kind, reason)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import quote

from curation.core.records import Lesion
from curation.review.closeness import (
    CLOSE,
    KIND_ORDER,
    NO_SPLIT,
    SPLIT_ORDER,
    RejectedFile,
    ReviewCluster,
    ReviewGroup,
    ReviewLink,
    ReviewMember,
    RuleCounts,
    bits,
    deciding_link,
    display_order,
    group_ratio,
    link_ratio,
    member_ratio,
)
from curation.review.films import MatchedPoints, view_geometry

Thumbs = dict[str, tuple[int, int] | str]  # film id -> its thumbnail's size, or why it has none
# film id -> the width and height of the film at full size, or why there is none
FilmSizes = dict[str, tuple[int, int] | str]
NOT_IN_DATASET = "not in the dataset"  # the split filter's value for rejected files
SAME_PICTURE = "same picture as a kept film"
LOOKALIKE_CLUSTER = "look-alike cluster"  # the kind filter's value for a cluster


def _cluster_reason(deciding: ReviewLink | None) -> str:
    """What joined a cluster, as the reason filter offers it."""
    return "patient links only" if deciding is None else "look-alike by hash"


def _ordered(values: set[str], first: Sequence[str]) -> list[str]:
    return [v for v in first if v in values] + sorted(values - set(first))


class PageView:
    """Builds the template's values; ``file_name(film id)`` names a film's files on disk."""

    def __init__(
        self,
        thumbs: Thumbs,
        sizes: FilmSizes,
        split_of: Mapping[str, str],
        lesions: Callable[[str], Sequence[Lesion]],
        matched: Callable[[str, str], MatchedPoints | None],
        file_name: Callable[[str], str],
    ) -> None:
        self.thumbs = thumbs
        self.sizes = sizes
        self.split_of = split_of
        self.lesions = lesions
        self.matched = matched
        self.file_name = file_name
        # films -> the view's id, caption, and whether it draws their matched features
        self.views: dict[tuple[str, ...], tuple[str, str, bool]] = {}

    def split(self, films: tuple[str, ...] | list[str]) -> str:
        """The splits of ``films``, comma-separated (``no split`` for a film without one)."""
        return ", ".join(sorted({self.split_of.get(film, NO_SPLIT) for film in films}))

    def view(self, films: tuple[str, ...], caption: str, features: bool = False) -> str:
        """The id of the enlarged view of ``films`` side by side (one per set of films): each
        at full size with its lesion boxes, and the matched features when asked for. Only
        what names it is kept here; ``made_views`` makes each when the page writes it."""
        if films not in self.views:
            self.views[films] = (f"view-{len(self.views) + 1}", caption, features)
        return self.views[films][0]

    def made_views(self) -> Iterator[dict[str, Any]]:
        """Every view asked for so far, in that order, each made as it is taken."""
        for films, (view_id, caption, features) in self.views.items():
            yield self._made_view(view_id, films, caption, features)

    def _made_view(
        self, view_id: str, films: tuple[str, ...], caption: str, features: bool
    ) -> dict[str, Any]:
        missing = [f"{f}: {self.sizes[f]}" for f in films if isinstance(self.sizes[f], str)]
        entry: dict[str, Any] = {"id": view_id, "caption": caption}
        if missing:
            entry["missing"] = "full-size film unavailable: " + "; ".join(missing)
            return entry
        placed = []
        for film in films:
            size = self.sizes[film]
            assert not isinstance(size, str)
            src = "films/" + quote(self.file_name(film))
            placed.append((src, size, self.lesions(film)))
        matched = self.matched(*films) if features and len(films) == 2 else None
        entry["svg"] = view_geometry(placed, matched)
        boxes = sum(len(lesions) for _, _, lesions in placed)
        facts = [f"{boxes} lesion box" if boxes == 1 else f"{boxes} lesion boxes"]
        if matched is not None:
            drawn = len(entry["svg"]["lines"])
            facts.append(f"{len(matched[0])} matched features ({drawn} drawn)")
        elif features:
            facts.append("no matched features to draw (the two films' features disagree)")
        entry["facts"] = ", ".join(facts)
        return entry

    def figure(self, film_id: str, role: str, view: str) -> dict[str, Any]:
        """A film's thumbnail and full-size file as the template draws them, or why it has none."""
        thumb = self.thumbs[film_id]
        if isinstance(thumb, str):
            return {"film": film_id, "role": role, "missing": thumb, "view": view}
        width, height = thumb
        src = "thumbs/" + quote(self.file_name(film_id))
        return {
            "film": film_id,
            "role": role,
            "src": src,
            "width": width,
            "height": height,
            "view": view,
            "full": "films/" + quote(self.file_name(film_id)),
        }

    def group(self, number: int, group: ReviewGroup) -> dict[str, Any]:
        """A same-picture group's template values, its closest-to-limit member first."""
        members = sorted(group.members, key=lambda m: (-member_ratio(m), m.film_id))
        split = self.split([group.kept])
        ratio = group_ratio(group)
        return {
            "anchor": f"group-{number}",
            "number": number,
            "kept": group.kept,
            "split": split,
            "ratio": ratio,
            "close": ratio >= CLOSE,
            "kinds": ", ".join(sorted({m.kind for m in members})),
            "members": [self.member(m, group.kept, split) for m in members],
        }

    def member(self, member: ReviewMember, kept: str, split: str) -> dict[str, Any]:
        """A dropped film beside its kept film, with the measurement against its limit."""
        ratio = member_ratio(member)
        caption = f"kept {kept} ({split}) | dropped {member.film_id} ({member.kind})"
        view = self.view((kept, member.film_id), caption, features=member.framed)
        return {
            "kept_figure": self.figure(kept, f"kept, {split}", view),
            "figure": self.figure(member.film_id, f"dropped: the same picture as {kept}", view),
            "split": split,
            "kind": member.kind,
            "reason": SAME_PICTURE,
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
        """A look-alike cluster's template values, with the weakest link it needs."""
        deciding = deciding_link(needed)
        split = self.split(cluster.film_ids)
        ratio = link_ratio(deciding) if deciding else 0.0
        if deciding is None:
            held = "held by patient links only"
        else:
            held = f"weakest needed link {deciding.distance} of {bits(deciding.limit)}"
        figures = []
        for film in sorted(cluster.film_ids):
            film_split = self.split([film])
            view = self.view((film,), f"{film} ({film_split}), cluster {cluster.cluster_id}")
            figures.append(self.figure(film, film_split, view))
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
            "reason": _cluster_reason(deciding),
            "figures": figures,
            "links": [
                self.link(link, deciding, link in needed)
                for link in sorted(cluster.links, key=display_order)
            ],
        }

    def link(self, link: ReviewLink, deciding: ReviewLink | None, needed: bool) -> dict[str, Any]:
        """A link's template values: its measure and whether the cluster needs it."""
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
        view = ""
        if link.visit:
            caption = f"visit of one patient: {link.first} | {link.second}"
            view = self.view((link.first, link.second), caption, features=True)
        return {
            "first": link.first,
            "second": link.second,
            "css": css,
            "measure": measure,
            "role": role,
            "reason": link.reason,
            "view": view,
        }

    def rows(
        self, groups: list[ReviewGroup], clusters: list[tuple[ReviewCluster, list[ReviewLink]]]
    ) -> Iterator[tuple[str, str, str]]:
        """Each dropped film's and multi-film cluster's split, kind and reason, as its row on
        the page offers them to the filters."""
        for group in groups:
            split = self.split([group.kept])
            for member in group.members:
                yield split, member.kind, SAME_PICTURE
        for cluster, needed in clusters:
            reason = _cluster_reason(deciding_link(needed))
            yield self.split(cluster.film_ids), LOOKALIKE_CLUSTER, reason

    @staticmethod
    def rejected(files: list[RejectedFile]) -> list[dict[str, str]]:
        """The rejected files as rows of the page's table."""
        return [
            {
                "path": f.path,
                "kind": f.kind,
                "reason": f.reason,
                "reason_class": f.reason.split(":", 1)[0],
                "split": NOT_IN_DATASET,
            }
            for f in files
        ]


def filters(rows: Iterable[tuple[str, str, str]]) -> list[tuple[str, str, list[str]]]:
    """Each filter (name, label, values present on the page, in a reader's order); ``rows``:
    each row's split, kind and reason."""
    splits: set[str] = set()
    kinds: set[str] = set()
    reasons: set[str] = set()
    for split, kind, reason in rows:
        splits.add(split)
        kinds.add(kind)
        reasons.add(reason)
    return [
        ("split", "split", _ordered(splits, (*SPLIT_ORDER, NOT_IN_DATASET))),
        ("kind", "kind", _ordered(kinds, KIND_ORDER)),
        ("reason", "reason", _ordered(reasons, (SAME_PICTURE,))),
    ]


def summary(
    groups: list[ReviewGroup],
    clusters: list[tuple[ReviewCluster, list[ReviewLink]]],
    split_of: Mapping[str, str],
    rules: RuleCounts | None,
    missing: int,
) -> list[tuple[str, str]]:
    """The counts a reviewer checks first against the build's own summary; ``clusters``: the
    multi-film clusters, each with the links it needs."""
    kinds = Counter(m.kind for g in groups for m in g.members)
    ordered = _ordered(set(kinds), KIND_ORDER)
    by_kind = ", ".join(f"{kind} {kinds[kind]}" for kind in ordered) or "none"
    splits = Counter(split_of.values())
    order = _ordered(set(splits), SPLIT_ORDER)
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
        ("films in those clusters", str(sum(len(c.film_ids) for c, _ in clusters))),
        (
            "clusters held by patient links only",
            str(sum(deciding_link(needed) is None for _, needed in clusters)),
        ),
        ("thumbnails unavailable", str(missing)),
    ]
