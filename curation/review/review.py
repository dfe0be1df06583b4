"""The review page: nobody can check the real archive's same-picture and look-alike decisions
by hand here, so the build writes a static page that whoever runs it can read at a glance.
For every same-picture pair (kept | dropped), every multi-film look-alike cluster and every
rejected file it shows which films, which split they went to and why (kind, evidence,
distance against its limit, margin); decisions near their limit come first. A click on a
film opens it at full size with its lesion boxes (and, for a framed copy or a visit, the
matched features); filters by split, kind and reason hide the other rows.

Static files only (``index.html``, ``thumbs/`` and ``films/``) and a few lines of inline
script, no external URL, so the page works from ``file://``. It is rendered by Jinja2 from
``templates/review.html`` with autoescaping on: film ids come from file names in a downloaded
archive. A film's file names are derived from its id, never trusted as a path. The same
inputs give the same bytes.
"""

from __future__ import annotations

import gc
import hashlib
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from itertools import chain
from pathlib import Path
from typing import Any

from curation.core.atomic import write_bytes
from curation.core.parallel import ordered_map
from curation.core.records import Lesion
from curation.features.features import FilmFeatures
from curation.hashes.thumbnails import Thumbnail, film_thumbnail
from curation.review.closeness import (
    CLOSE,
    RejectedFile,
    ReviewCluster,
    ReviewGroup,
    ReviewLink,
    RuleCounts,
    cluster_ratio,
    deciding_link,
    group_ratio,
    needed_links,
)
from curation.review.films import MatchedPoints, full_film, matched_points
from curation.review.pages import write_page
from curation.review.view import FilmSizes, PageView, Thumbs, filters, summary

THUMBS_AT_ONCE = 256  # thumbnails read or made, then written, at a time (about 2.6 KB each)
NEAR_NAMED = 12  # near-limit decisions named at the top; more would push the first film down
# Ids that are already a harmless file name keep it, so a reviewer can find a film's files.
_PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def _file_name(film_id: str) -> str:
    """A file name that cannot leave its folder whatever the id holds ("../", "/", NUL)."""
    if _PLAIN_NAME.fullmatch(film_id):
        return f"{film_id}.jpg"
    return f"_{hashlib.sha256(film_id.encode('utf-8', 'surrogatepass')).hexdigest()[:20]}.jpg"


def _write_thumbnails(
    folder: Path,
    films: list[str],
    known: Callable[[list[str]], Mapping[str, Thumbnail]],
    image_path: Callable[[str], Path],
    workers: int,
) -> Thumbs:
    """Each film's thumbnail into ``folder``, ``THUMBS_AT_ONCE`` films at a time (the stored
    ones read, the others made over ``workers``), each let go once written, so that the page
    holds one batch's bytes, not those of every film it shows: each film's thumbnail size (or
    why it has none)."""
    thumbs: Thumbs = {}
    for start in range(0, len(films), THUMBS_AT_ONCE):
        batch = films[start : start + THUMBS_AT_ONCE]
        found: dict[str, Thumbnail | str] = dict(known(batch))
        missing = [film for film in batch if film not in found]
        made = ordered_map(film_thumbnail, [image_path(film) for film in missing], workers)
        found.update(zip(missing, made, strict=True))
        for film in batch:
            thumb = found.pop(film)
            if isinstance(thumb, str):
                thumbs[film] = thumb
            else:
                write_bytes(folder / _file_name(film), thumb.jpeg)
                thumbs[film] = thumb.size
    return thumbs


def _write_full_films(
    folder: Path, films: list[str], image_path: Callable[[str], Path]
) -> FilmSizes:
    """Each film's published JPEG into ``folder`` as soon as it is made, so that the page
    holds one film's bytes at a time, not those of every film it shows: each film's size (or
    why it has none)."""
    sizes: FilmSizes = {}
    for film in films:
        made = full_film(image_path(film))
        if isinstance(made, str):
            sizes[film] = made
            continue
        write_bytes(folder / _file_name(film), made.jpeg)
        sizes[film] = made.size
    return sizes


def _written(sizes: Thumbs | FilmSizes) -> set[str]:
    """The names of the files written for the films that have a size (the others have why
    not): named once the page is written, not held beside it."""
    return {_file_name(film) for film, size in sizes.items() if not isinstance(size, str)}


def _remove_stale(folder: Path, kept: set[str]) -> None:
    """Every file in ``folder`` but ``kept``: an earlier page's, or a crashed write's."""
    if folder.is_dir():
        for stale in sorted(folder.iterdir()):
            if stale.is_file() and stale.name not in kept:
                stale.unlink()


def _images_first(kind_count: tuple[str, int]) -> tuple[bool, str]:
    return kind_count[0] != "image", kind_count[0]


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
    features: Callable[[str], FilmFeatures | None] = lambda film: None,
    lesions: Callable[[str], Sequence[Lesion]] = lambda film: (),
    rejected: Sequence[RejectedFile] = (),
    decisions: list[str] | None = None,
) -> Path:
    """Write ``out_dir/index.html``, its thumbnails and full-size films; return the page's path.

    ``split_of`` maps each kept film to its split; ``rules`` says how many films each rule
    dropped; ``lesions(film id)`` gives a film's lesion boxes; ``rejected`` lists the files the
    build refused. Groups are ordered by their largest difference/limit, clusters by their
    weakest needed link's distance/limit (clusters held by patient links alone last), closest
    call first, ties by id; decisions at ``CLOSE`` of their limit or more are named first of
    all. Films are written before the page and stale ones removed after it, each file
    atomically, so a reader never meets a page pointing at a missing file. ``known(film ids)``
    gives the thumbnails already made (the hash step's, by film id); the others are made here
    over ``workers`` processes (0: one per core). ``features(film id)`` gives a film's local
    features when the same-picture step has them (the others are computed for the matched
    features a view draws). ``decisions``: the curator's (``BUILD/decisions.toml``), one
    sentence each, listed after the summary."""
    split_of = split_of or {}
    groups = sorted(groups, key=lambda g: (-group_ratio(g), g.kept))
    decided = [(c, needed_links(c)) for c in clusters if len(c.film_ids) > 1]
    decided.sort(key=lambda c: (-cluster_ratio(c[1]), deciding_link(c[1]) is None, c[0].cluster_id))
    films = [g.kept for g in groups] + [m.film_id for g in groups for m in g.members]
    films += [film for c, _ in decided for film in c.film_ids]
    shown = list(dict.fromkeys(films))
    thumbs = _write_thumbnails(out_dir / "thumbs", shown, known, image_path, workers)
    sizes = _write_full_films(out_dir / "films", shown, image_path)

    def matched(first: str, second: str) -> MatchedPoints | None:  # asked once per view
        held = (features(first), features(second))
        return matched_points(image_path(first), image_path(second), held)

    view = PageView(thumbs, sizes, split_of, lesions, matched, _file_name)
    index = out_dir / "index.html"
    _write_page(index, view, groups, decided, rejected, title, synthetic, rules, decisions or [])
    # Jinja's macros and the context they render in refer to each other, so what the page
    # was rendered from is let go only by the cyclic collector, which a process holding a
    # build's records runs seldom: let it go now, not after the build has checked its files.
    del view
    gc.collect()
    _remove_stale(out_dir / "thumbs", _written(thumbs))
    _remove_stale(out_dir / "films", _written(sizes))
    return index


def _write_page(
    index: Path,
    view: PageView,
    groups: list[ReviewGroup],
    decided: list[tuple[ReviewCluster, list[ReviewLink]]],
    rejected: Sequence[RejectedFile],
    title: str,
    synthetic: bool,
    rules: RuleCounts | None,
    decisions: list[str],
) -> None:
    """The page's HTML into ``index``. Each group's, cluster's and enlarged view's values are
    made as the page writes it and let go once written: held all at once, for every film an
    archive shows, they took about three times the page's own size."""
    near: list[dict[str, Any]] = [
        {"anchor": f"group-{number}", "number": number, "kept": group.kept, "ratio": ratio}
        for number, group in enumerate(groups, 1)
        if (ratio := group_ratio(group)) >= CLOSE
    ]
    near += [
        {
            "anchor": f"cluster-{number}",
            "number": number,
            "cluster_id": c.cluster_id,
            "ratio": ratio,
        }
        for number, (c, needed) in enumerate(decided, 1)
        if (ratio := cluster_ratio(needed)) >= CLOSE
    ]
    near.sort(key=lambda d: (-d["ratio"], d["anchor"]))
    rejected_rows = view.rejected(sorted(rejected, key=lambda f: (f.kind != "image", f.path)))
    rejected_values = ((r["split"], r["kind"], r["reason_class"]) for r in rejected_rows)
    rows = chain(view.rows(groups, decided), rejected_values)
    unavailable = sum(isinstance(thumb, str) for thumb in view.thumbs.values())
    write_page(
        index,
        "review.html",
        title=title,
        synthetic=synthetic,
        close=CLOSE,
        summary=summary(groups, decided, view.split_of, rules, unavailable),
        near=near[:NEAR_NAMED],
        near_count=len(near),
        groups=(view.group(number, group) for number, group in enumerate(groups, 1)),
        group_count=len(groups),
        clusters=(
            view.cluster(number, cluster, needed)
            for number, (cluster, needed) in enumerate(decided, 1)
        ),
        cluster_count=len(decided),
        decisions=decisions,
        rejected=rejected_rows,
        rejected_kinds=sorted(Counter(r["kind"] for r in rejected_rows).items(), key=_images_first),
        filters=filters(rows),
        views=view.made_views(),
    )
