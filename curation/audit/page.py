"""The audit's ``report.html``: the verdict first (clean, a leak, or visits of one patient
across splits) with the counts per split and the findings; then each pair across splits once,
as two thumbnails side by side that a click enlarges (the drawing of the matched features for
a pair verified by features, the two films for a pair flagged by hash)."""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq
from PIL import Image

from curation.core.build_origin import SAMPLE_BANNER, build_of, is_synthetic
from curation.core.records import Lesion
from curation.leaks.visits import search_phrase, visit_entries, visit_rule
from curation.review.films import published_film, view_geometry
from curation.review.pages import render_page

if TYPE_CHECKING:
    from curation.leaks.leakage import Audit, Pair
    from curation.leaks.visits import CrossSplitMatch

# Pairs of each kind the HTML page shows as cards (flagged by hash; verified by features),
# the rest counted and listed in report.json: each card carries two thumbnails inline, and a
# page of every verified pair grew to 92 MB at 256,000 rows (docs/scale.md).
SHOWN = 48
THUMB = (360, 180)
FILMS_FOLDER = "films"


def _film(audit: Audit, index: int) -> dict[str, str]:
    film = audit.films[index]
    return {"film_id": film.film_id, "split": film.split}


def _thumbnail(audit: Audit, index: int) -> str:
    with Image.open(io.BytesIO(audit.image_bytes(audit.films[index]))) as image:
        image.thumbnail(THUMB)  # a JPEG is decoded at the smallest draft scale that covers it
        small = image.convert("RGB")
    buffer = io.BytesIO()
    small.save(buffer, format="JPEG", quality=85)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


@dataclass
class ReportPage:
    """The page and the files beside it: each film a pair view opens, at full size, by name
    below the report's folder (``films/film-NNNNNN.jpg``, numbered by the film's row in the
    audit, never named after its id)."""

    html: str = ""
    films: dict[str, bytes] = field(default_factory=dict)
    thumbs: dict[int, str] = field(default_factory=dict)


def _view_film(audit: Audit, index: int, page: ReportPage) -> dict[str, str]:
    """A film as the page shows it, its thumbnail made once per page."""
    if index not in page.thumbs:
        page.thumbs[index] = _thumbnail(audit, index)
    return {**_film(audit, index), "thumb": page.thumbs[index]}


def _lesions(audit: Audit, index: int) -> tuple[Lesion, ...]:
    """The film's lesion boxes, where its label column lists them (``box``: four fractions of
    the film, top-left origin, as the build publishes them); none otherwise."""
    film, column = audit.films[index], audit.columns.get("label")
    if not column or not film.lesions:
        return ()
    reader = pq.ParquetFile(audit.shards[film.shard])
    first = 0
    for group in range(reader.num_row_groups):
        rows = reader.metadata.row_group(group).num_rows
        if film.row < first + rows:
            table = reader.read_row_group(group, columns=[column])
            value = table.column(0)[film.row - first].as_py()
            break
        first += rows
    else:
        return ()
    boxes = []
    for item in value if isinstance(value, list) else []:
        box = item.get("box") if isinstance(item, dict) else None
        if isinstance(box, list) and len(box) == 4 and all(isinstance(v, float) for v in box):
            x0, y0, x1, y1 = box
            if 0 <= x0 < x1 <= 1 and 0 <= y0 < y1 <= 1:
                boxes.append(Lesion((x0, y0, x1, y1), int(item.get("pai") or 0)))
    return tuple(boxes)


def _pair_view(audit: Audit, pair: Pair, page: ReportPage, view: str) -> dict[str, Any]:
    """The two films at full size side by side, with their lesion boxes: the files beside the
    page are their JPEGs as the build publishes films (nothing from beside the picture)."""
    names = [f"{audit.films[i].split} / {audit.films[i].film_id}" for i in (pair.a, pair.b)]
    entry: dict[str, Any] = {
        "id": view,
        "caption": f"{' | '.join(names)}: {pair.method} distance {pair.distance}",
    }
    placed = []
    for index, name in zip((pair.a, pair.b), names, strict=True):
        full = published_film(audit.image_bytes(audit.films[index]), name)
        if isinstance(full, str):
            return {**entry, "missing": f"full-size film unavailable: {full}"}
        file = f"{FILMS_FOLDER}/film-{index:06d}.jpg"
        page.films[file] = full.jpeg
        placed.append((file, full.size, _lesions(audit, index)))
    boxes = sum(len(lesions) for _, _, lesions in placed)
    facts = f"{boxes} lesion box" if boxes == 1 else f"{boxes} lesion boxes"
    return {**entry, "svg": view_geometry(placed), "facts": facts}


def _pair_rows(
    audit: Audit, pairs: list[Pair], page: ReportPage, views: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The pairs as the template shows them, each with the enlarged view a click opens."""
    rows = []
    for pair in pairs:
        view = f"view-{len(views) + 1}"
        views.append(_pair_view(audit, pair, page, view))
        rows.append(
            {
                "films": [_view_film(audit, index, page) for index in (pair.a, pair.b)],
                "method": pair.method,
                "distance": pair.distance,
                "flagged": pair.distance <= audit.thresholds[pair.method],
                "view": view,
            }
        )
    return rows


def shown_visits(visits: list[CrossSplitMatch]) -> list[CrossSplitMatch]:
    """The verified pairs the page shows, and the audit draws: visits of one patient first
    (no hash distance shows them), then the curator's, then the same picture reframed, each
    kind in the audit's order; at most ``SHOWN``."""
    return sorted(visits, key=lambda m: (m.same_picture, bool(m.decided)))[:SHOWN]


def _visit_cards(
    audit: Audit, page: ReportPage, views: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Each cross-split pair verified by features that the page shows (``shown_visits``),
    with the hash distances the pair also has (so it is shown once): both thumbnails, and a
    click opens the drawing of its matched features (``visits/``)."""
    hashed: dict[tuple[int, int], list[str]] = {}
    for pair in [*audit.pairs, *audit.closest]:
        flagged = " (flagged)" if pair.distance <= audit.thresholds[pair.method] else ""
        note = f"{pair.method} distance {pair.distance}{flagged}"
        if note not in hashed.setdefault((pair.a, pair.b), []):
            hashed[(pair.a, pair.b)].append(note)
    cards = []
    shown = shown_visits(audit.visits)
    for match, entry in zip(shown, visit_entries(audit.films, shown), strict=True):
        view = f"view-{len(views) + 1}"
        film, other = _view_film(audit, match.a, page), _view_film(audit, match.b, page)
        caption = (
            f"{entry['kind']}: {film['split']} / {film['film_id']} | {other['split']} / "
            f"{other['film_id']}, {match.inliers} matched features of {match.matches}"
        )
        views.append({"id": view, "drawing": match.drawing, "caption": caption})
        hashes = ", ".join(hashed.get((match.a, match.b), []))
        cards.append({**entry, "film": film, "other": other, "view": view, "hashes": hashes})
    return cards


def _verdict(audit: Audit) -> dict[str, str]:
    """The page's first line: clean, a leak, or visits of one patient across splits."""
    visits = len(audit.patient_visits)
    crossing = f"; {visits} visits of one patient cross splits as well" if visits else ""
    if audit.findings:
        count = len(audit.findings)
        return {
            "status": "leak",
            "title": f"LEAK: {count} finding{'s' if count > 1 else ''}",
            "detail": f"Films or hints cross the splits, as listed below{crossing}.",
        }
    if visits:
        return {
            "status": "visits",
            "title": f"Not clean: {visits} visits of one patient cross splits",
            "detail": "No hash-level leak or hint found; the visits are shown below.",
        }
    return {"status": "clean", "title": "Clean", "detail": "No leakage or hint found."}


def _split_rows(figures: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The counts per split, as the terminal's table shows them."""
    rows = []
    for split, entry in figures.items():
        nearest = entry.get("nearest_to_train")
        grades = entry.get("grades") or entry.get("labels") or {}
        rows.append(
            {
                "split": split,
                "films": entry["films"],
                "lesions": entry.get("lesions", ""),
                "lesion_free": entry.get("lesion_free", ""),
                "grades": ", ".join(f"{g}: {n}" for g, n in grades.items()),
                "nearest": f"min {nearest['min']}, median {nearest['median']:g}" if nearest else "",
            }
        )
    return rows


def report_page(audit: Audit, figures: dict[str, dict[str, Any]], histogram: bytes) -> ReportPage:
    """The page (``figures``: ``report.split_figures``; ``histogram``: ``nearest.png``'s
    bytes), rendered by Jinja2 (``templates/audit.html``) with autoescaping: film ids,
    splits, labels and findings come from the audited dataset. Each pair is shown once: a
    pair verified by features with its hash distances, the flagged pairs without those, the
    closest pairs without any flagged."""
    page = ReportPage()
    views: list[dict[str, Any]] = []
    visits = _visit_cards(audit, page, views)
    verified = {(m.a, m.b) for m in audit.visits}
    flagged_pairs = [p for p in audit.pairs if (p.a, p.b) not in verified]
    flagged = _pair_rows(audit, flagged_pairs[:SHOWN], page, views)
    shown = verified | {(p.a, p.b) for p in audit.pairs}
    closest = [p for p in audit.closest if (p.a, p.b) not in shown]
    page.html = render_page(
        "audit.html",
        target=audit.target,
        banner=SAMPLE_BANNER if is_synthetic(build_of(audit.target)) else "",
        verdict=_verdict(audit),
        splits=_split_rows(figures),
        visit_count=len(audit.patient_visits),
        visit_total=len(audit.visits),
        visits=visits,
        visit_rule=visit_rule(),
        visit_search=search_phrase(audit.visit_search),
        notes=audit.decision_notes,
        hash_version=audit.hash_version,
        thresholds=audit.thresholds,
        findings=audit.findings,
        pair_count=len(audit.pairs),
        flagged=flagged,
        more=len(flagged_pairs) - len(flagged),
        closest=_pair_rows(audit, closest, page, views),
        histogram=base64.b64encode(histogram).decode("ascii"),
        permutations=audit.permutations,
        seed=audit.seed,
        associations=audit.associations,
        views=views,
    )
    return page
