"""The review page (issue 11, item 8): nobody can check the real archive's same-picture and
look-alike decisions by hand here, so the build writes a static page that whoever runs it can
read at a glance. It shows every same-picture group and every multi-film look-alike cluster with
small thumbnails and the measured numbers beside their limits, closest call first.

Static files only (``index.html`` and ``thumbs/``), no script and no external URL, so the page
works from ``file://``. Film ids come from file names in a downloaded archive, so every string
on the page is escaped and a thumbnail's file name is derived from its id, never trusted as a
path. The same inputs give the same bytes: nothing on the page depends on time or order of
arrival.
"""

from __future__ import annotations

import hashlib
import html
import math
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from string import Template
from urllib.parse import quote

from networkx.utils import UnionFind

from curation.atomic import write_bytes
from curation.parallel import ordered_map
from curation.thumbnails import Thumbnail, film_thumbnail


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


class ReviewError(ValueError):
    """The records handed to the page contradict themselves (a bug upstream, not bad luck)."""


CLOSE = 0.8  # a measurement using this much of its limit is shown in red
KIND_ORDER = ("mirror", "rotation", "rescaled", "noised", "re-filing")
# Ids that are already a harmless file name keep it, so a reviewer can find a film's thumbnail.
_PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")

_PAGE = Template("""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>$title</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #111; background: #fff; }
h1 { font-size: 1.5em; } h2 { font-size: 1.15em; margin: 0 0 .4em; }
.banner { background: #ffe08a; border: 2px solid #b07d00; padding: .6em 1em; font-weight: bold; }
section { border-top: 1px solid #bbb; padding: .8em 0; }
.films, .member { display: flex; flex-wrap: wrap; gap: .8em; align-items: flex-start; }
.member { flex-wrap: nowrap; max-width: 560px; } .facts td:first-child { white-space: nowrap; }
figure { margin: 0; width: 200px; } figure img { display: block; background: #ddd; }
figcaption { font-size: 12px; overflow-wrap: anywhere; } .kept figcaption { color: #05631e; }
.close, .missing, .kept figcaption { font-weight: bold; } .close, .missing { color: #a30000; }
.missing { width: 192px; height: 100px; background: #eee; font-size: 12px; }
td, th { padding: 0 .8em 0 0; vertical-align: top; text-align: left; }
tr.deciding { background: #fff2c6; } tr.patient { color: #3b3bb0; }
</style></head>
<body><h1>$title</h1>
$banner$summary
<h2 id="groups">Same-picture groups: closest to the limit first</h2>
$groups
<h2 id="clusters">Look-alike clusters: weakest needed link first</h2>
$clusters
</body></html>
""")


def _e(text: object) -> str:
    """Every string that reaches the page passes here: ids and evidence are hostile input."""
    return html.escape(str(text), quote=True)


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


def _deciding_link(cluster: ReviewCluster) -> ReviewLink | None:
    """The weakest link the cluster needs: the largest hash link of a minimum spanning forest
    (Kruskal, patient links first). Lowering the limit below it would split the cluster, which
    the largest of all links does not say when the links form cycles. None when patient links
    alone hold the cluster together."""
    films = UnionFind(cluster.film_ids)
    members = set(cluster.film_ids)
    deciding = None
    for link in sorted(cluster.links, key=_kruskal_order):
        if not {link.first, link.second} <= members:
            raise ReviewError(
                f"Cluster {cluster.cluster_id!r} lists a link between {link.first!r} and "
                f"{link.second!r}, which are not both among its films."
            )
        if films[link.first] != films[link.second]:
            films.union(link.first, link.second)
            deciding = link if link.distance is not None else deciding
    if len({films[film] for film in cluster.film_ids}) > 1:
        raise ReviewError(f"Cluster {cluster.cluster_id!r} has films no listed link connects.")
    return deciding


Thumbs = dict[str, Thumbnail | str]  # film id -> thumbnail, or why there is none


def _figure(film_id: str, thumbs: Thumbs, role: str) -> str:
    """One film's thumbnail (or why it is missing) with its id and role underneath."""
    thumb = thumbs[film_id]
    if isinstance(thumb, str):
        picture = f'<div class="missing">thumbnail unavailable: {_e(thumb)}</div>'
    else:
        width, height = thumb.size
        source = _e("thumbs/" + quote(_thumb_name(film_id)))
        picture = f'<img src="{source}" width="{width}" height="{height}" alt="{_e(film_id)}">'
    css = ' class="kept"' if role == "kept" else ""
    return f"<figure{css}>{picture}<figcaption>{_e(film_id)}<br>{_e(role)}</figcaption></figure>"


def _member_html(member: ReviewMember, thumbs: Thumbs) -> str:
    """A dropped film: thumbnail, then the facts a reviewer needs to agree or not."""
    ratio = _member_ratio(member)
    margin = member.limit - member.difference
    facts = (
        ("kind", _e(member.kind)),
        ("view", _e(member.view)),
        ("hash distance", f"{_e(member.hash_distance)} bits"),
        (
            "difference",
            f'<span class="{"close" if ratio >= CLOSE else "ok"}">{member.difference:.2f}</span>'
            f" of limit {member.limit:.2f} "
            f"grey levels ({ratio:.0%}, margin {margin:.2f})",
        ),
        ("evidence", _e(member.evidence)),
    )
    rows = "".join(f"<tr><td>{name}</td><td>{value}</td></tr>" for name, value in facts)
    figure = _figure(member.film_id, thumbs, "dropped")
    return f'<div class="member">{figure}<table class="facts">{rows}</table></div>'


def _group_html(number: int, group: ReviewGroup, thumbs: Thumbs) -> str:
    """A same-picture group, its dropped films closest to the limit first."""
    members = sorted(group.members, key=lambda m: (-_member_ratio(m), m.film_id))
    body = _figure(group.kept, thumbs, "kept") + "".join(_member_html(m, thumbs) for m in members)
    heading = (
        f"Group {number}: kept {_e(group.kept)}, {len(members)} dropped, "
        f"closest at {_group_ratio(group):.0%} of its limit"
    )
    return (
        f'<section class="group" id="group-{number}" data-kept="{_e(group.kept)}">'
        f'<h2>{heading}</h2><div class="films">{body}</div></section>'
    )


def _link_row(link: ReviewLink, deciding: ReviewLink | None) -> str:
    """One link: hash links show distance against limit, patient links are marked apart."""
    if link.distance is None:
        css, numbers = "patient", "patient link (no threshold)"
    else:
        css = "deciding" if link is deciding else "hash"
        numbers = f"{link.distance} of {link.limit} bits (margin {link.limit - link.distance})"
        numbers += ": weakest needed link" if link is deciding else ""
    cells = (_e(link.first), _e(link.second), numbers, _e(link.reason))
    return f'<tr class="{css}">' + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>"


def _cluster_html(
    number: int, cluster: ReviewCluster, deciding: ReviewLink | None, thumbs: Thumbs
) -> str:
    """A multi-film cluster: every film's thumbnail and every link, hash links closest first."""
    links = sorted(cluster.links, key=_display_order)
    figures = "".join(_figure(film, thumbs, "in cluster") for film in sorted(cluster.film_ids))
    rows = "".join(_link_row(link, deciding) for link in links)
    held = (
        f"weakest needed link {deciding.distance} of {deciding.limit} bits"
        if deciding is not None
        else "held by patient links only"
    )
    return (
        f'<section class="cluster" id="cluster-{number}" data-cluster="{_e(cluster.cluster_id)}">'
        f"<h2>Cluster {number}: {_e(cluster.cluster_id)}, {len(cluster.film_ids)} films, "
        f'{held}</h2><div class="films">{figures}</div><table class="links"><tr><th>film</th>'
        f"<th>film</th><th>distance</th><th>reason</th></tr>{rows}</table></section>"
    )


def _summary_html(
    groups: list[ReviewGroup],
    clusters: list[tuple[ReviewCluster, ReviewLink | None]],
    missing: int,
) -> str:
    """The counts a reviewer checks first against the build's own summary."""
    kinds = Counter(m.kind for g in groups for m in g.members)
    ordered = [k for k in KIND_ORDER if k in kinds] + sorted(set(kinds) - set(KIND_ORDER))
    by_kind = ", ".join(f"{_e(kind)} {kinds[kind]}" for kind in ordered) or "none"
    patient_only = sum(deciding is None for _, deciding in clusters)
    rows = (
        ("same-picture groups", str(len(groups))),
        ("dropped films", f"{kinds.total()} ({by_kind})"),
        ("multi-film look-alike clusters", str(len(clusters))),
        ("films in those clusters", str(sum(len(c.film_ids) for c, _ in clusters))),
        ("clusters held by patient links only", str(patient_only)),
        ("thumbnails unavailable", str(missing)),
    )
    cells = "".join(f"<tr><th>{name}</th><td>{value}</td></tr>" for name, value in rows)
    return f'<table class="summary">{cells}</table>'


def write_review_page(
    out_dir: Path,
    groups: list[ReviewGroup],
    clusters: list[ReviewCluster],
    image_path: Callable[[str], Path],
    *,
    title: str,
    synthetic: bool,
    workers: int = 0,
    known: Callable[[list[str]], Mapping[str, Thumbnail]] = lambda films: {},
) -> Path:
    """Write ``out_dir/index.html`` and its thumbnails; return the page's path.

    Groups are ordered by their largest difference/limit, clusters by their weakest needed
    link's distance/limit (clusters held by patient links alone last), closest call first,
    ties by id. Thumbnails are written before the page and stale ones removed after it, each
    file atomically, so a reader never meets a page pointing at a missing thumbnail.
    ``known(film ids)`` gives the thumbnails already made (the hash step's, by film id); the
    others are made here over ``workers`` processes (0: one per core)."""
    groups = sorted(groups, key=lambda g: (-_group_ratio(g), g.kept))
    decided = [(c, _deciding_link(c)) for c in clusters if len(c.film_ids) > 1]
    decided.sort(key=lambda c: (-_link_ratio(c[1]) if c[1] else 0.0, c[1] is None, c[0].cluster_id))
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
    banner = (
        '<p class="banner">Synthetic sample: these films were generated by pericurate, not '
        "taken from the real archive; this page checks the code, not the archive.</p>"
        if synthetic
        else ""
    )
    missing = sum(isinstance(thumb, str) for thumb in thumbs.values())
    page = _PAGE.substitute(
        title=_e(title),
        banner=banner,
        summary=_summary_html(groups, decided, missing),
        groups="\n".join(_group_html(i, g, thumbs) for i, g in enumerate(groups, 1))
        or "<p>No same-picture groups.</p>",
        clusters="\n".join(
            _cluster_html(i, c, deciding, thumbs) for i, (c, deciding) in enumerate(decided, 1)
        )
        or "<p>No multi-film look-alike clusters.</p>",
    )
    index = out_dir / "index.html"
    write_bytes(index, page.encode("utf-8"))
    kept_names = {_thumb_name(film) for film, thumb in thumbs.items() if not isinstance(thumb, str)}
    if thumb_dir.is_dir():
        for stale in sorted(thumb_dir.iterdir()):
            if stale.is_file() and stale.name not in kept_names:
                stale.unlink()
    return index
