"""What ``pericurate audit`` shows: a terminal summary, ``report.json``, ``report.html``
(``curation.audit.page``) and ``nearest.png`` (a histogram of each film's nearest distance to
train, drawn with Pillow). No timestamps and no absolute cache paths, so the same data gives
the same bytes."""

from __future__ import annotations

import io
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from PIL import Image, ImageDraw, ImageFont
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from curation.audit.page import FILMS_FOLDER, report_page, shown_visits
from curation.core.atomic import write_bytes, write_json
from curation.core.build_origin import SAMPLE_BANNER, build_of, is_synthetic
from curation.leaks.visits import search_phrase, visit_entries, visit_rule, write_drawings

if TYPE_CHECKING:
    from curation.leaks.leakage import Audit, Pair
    from curation.leaks.target import Film

LISTED = 1000  # pairs and hints listed in report.json (all are counted)
BIN = 8
PLOT = (720, 360)
MARGIN = (60, 30, 20, 50)  # left, top, right, bottom
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b")


def _film(audit: Audit, index: int) -> dict[str, str]:
    film = audit.films[index]
    return {"film_id": film.film_id, "split": film.split}


def _paired(audit: Audit, index: int) -> dict[str, Any]:
    """One film of a pair; a film standing for copies of itself in its split says how many
    films (itself included) it stands for: the pair is then a group of film pairs."""
    copies = audit.copies.get(index)
    return {**_film(audit, index), **({"films_with_these_bytes": copies} if copies else {})}


def _pair(audit: Audit, pair: Pair) -> dict[str, Any]:
    return {
        "method": pair.method,
        "distance": pair.distance,
        "a": _paired(audit, pair.a),
        "b": _paired(audit, pair.b),
    }


def _distribution(distances: list[int], threshold: int) -> dict[str, Any]:
    values = np.asarray(distances)
    return {
        "films": len(distances),
        "min": int(values.min()),
        "p05": float(np.percentile(values, 5)),
        "median": float(np.median(values)),
        "max": int(values.max()),
        "at_or_below_threshold": int((values <= threshold).sum()),
    }


def split_figures(audit: Audit) -> dict[str, dict[str, Any]]:
    """Films, lesions, grade counts, lesion-free films and nearest distances to train."""
    figures: dict[str, dict[str, Any]] = {}
    for split in audit.splits:
        films: list[Film] = [f for f in audit.films if f.split == split]
        entry: dict[str, Any] = {"films": len(films)}
        if any(f.lesions is not None for f in films):
            grades = Counter(g for f in films for g in f.grades)
            entry["lesions"] = sum(f.lesions or 0 for f in films)
            entry["grades"] = {str(g): grades[g] for g in sorted(grades)}
            entry["lesion_free"] = sum(f.lesions == 0 for f in films)
        elif any(f.label is not None for f in films):
            labels = Counter(str(f.label) for f in films)
            entry["labels"] = {k: labels[k] for k in sorted(labels)}
        if audit.nearest.get(split):
            entry["nearest_to_train"] = _distribution(
                audit.nearest[split], audit.thresholds["ahash"]
            )
        figures[split] = entry
    return figures


def report_json(audit: Audit) -> dict[str, Any]:
    """The audit as ``report.json`` records it: target, visits across splits, leakage
    findings and each split's figures."""
    groups_of = {
        "same_bytes": audit.same_bytes,
        "same_pixels": audit.same_pixels,
    }
    return {
        "target": audit.target,
        "synthetic_sample": is_synthetic(build_of(audit.target)),
        "cross_split_visits": {
            "rule": visit_rule(),
            "search": search_phrase(audit.visit_search),
            "visits_of_one_patient": len(audit.patient_visits),
            "drawn": sum(bool(v.drawing) for v in audit.visits),
            "listed": visit_entries(audit.films, audit.visits),
        },
        **({"set_aside_by_curator": audit.decision_notes} if audit.decision_notes else {}),
        "shards": [s.name for s in audit.shards],
        "columns": audit.columns,
        "hash_version": audit.hash_version,
        "parameters": {
            "thresholds_bits": audit.thresholds,
            "permutations": audit.permutations,
            "seed": audit.seed,
            "alpha_after_bonferroni": 0.01,
        },
        "splits": split_figures(audit),
        "reused_film_ids": audit.reused_ids,
        "cross_split_pairs": {
            "count": audit.pair_count,
            "listed": [_pair(audit, p) for p in audit.pairs[:LISTED]],
        },
        "same_picture_turned": [
            {
                "film": _paired(audit, p.a),
                "other": _paired(audit, p.b),
                "view": "negative" if p.negative else p.view.value,
                "hash_distance": p.distance,
                "pixel_difference": p.difference,
            }
            for p in audit.turned
        ],
        "closest_cross_split_pairs": [_pair(audit, p) for p in audit.closest],
        "exact_duplicates": {
            kind: [[_film(audit, i) for i in group] for group in groups]
            for kind, groups in groups_of.items()
        },
        "clusters": audit.clusters,
        "groups": audit.groups,
        "hints": {
            "count": len(audit.hints),
            "listed": [
                {**_film(audit, h.film), "field": h.field, "category": h.category, "match": h.match}
                for h in audit.hints[:LISTED]
            ],
        },
        "associations": [
            {
                "field": t.field,
                "label": t.label,
                "statistic": t.statistic,
                "observed": t.observed,
                "p_value": t.p_value,
                "p_bonferroni": t.p_adjusted,
                "films": t.films,
                "flagged": t.flagged,
            }
            for t in audit.associations
        ],
        "findings": audit.findings,
        "clean": not audit.findings and not audit.patient_visits,
    }


def nearest_png(audit: Audit) -> bytes:
    """Histogram of nearest average-hash distances to train, one bar colour per split."""
    image = Image.new("RGB", PLOT, "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default()
    left, top, right, bottom = MARGIN
    width, height = PLOT[0] - left - right, PLOT[1] - top - bottom
    splits = [s for s in audit.splits if audit.nearest.get(s)]
    if not splits:
        draw.text((left, top), "No train split: nothing to measure against.", fill="black")
        return _png(image)
    top_distance = max(64, max(max(audit.nearest[s]) for s in splits) + 1)
    bins = -(-top_distance // BIN)
    counts = {s: np.bincount(np.asarray(audit.nearest[s]) // BIN, minlength=bins) for s in splits}
    tallest = max(int(c.max()) for c in counts.values())
    bin_px = width / bins
    bar_px = bin_px / len(splits)
    for k, split in enumerate(splits):
        colour = COLOURS[k % len(COLOURS)]
        for b, count in enumerate(counts[split].tolist()):
            if count:
                x0 = left + b * bin_px + k * bar_px
                y0 = top + height * (1 - count / tallest)
                draw.rectangle((x0, y0, x0 + max(bar_px - 1, 1), top + height), fill=colour)
        draw.rectangle(
            (left + width - 130, top + 5 + 16 * k, left + width - 120, top + 15 + 16 * k),
            fill=colour,
        )
        draw.text((left + width - 115, top + 4 + 16 * k), split, fill="black", font=font)
    limit_x = left + width * (audit.thresholds["ahash"] + 0.5) / (bins * BIN)
    draw.line((limit_x, top, limit_x, top + height), fill="red", width=2)
    draw.text((limit_x + 4, top), f"threshold {audit.thresholds['ahash']}", fill="red", font=font)
    draw.line((left, top + height, left + width, top + height), fill="black")
    draw.line((left, top, left, top + height), fill="black")
    for tick in range(0, bins * BIN + 1, max(BIN, (bins * BIN) // 8 // BIN * BIN)):
        x = left + width * tick / (bins * BIN)
        draw.line((x, top + height, x, top + height + 4), fill="black")
        draw.text((x - 6, top + height + 6), str(tick), fill="black", font=font)
    draw.text((left - 40, top), str(tallest), fill="black", font=font)
    draw.text((left - 40, top + height - 10), "0", fill="black", font=font)
    draw.text(
        (left, PLOT[1] - 18),
        "nearest average-hash distance to a train film (bits of 512); bars: films",
        fill="black",
        font=font,
    )
    return _png(image)


def _png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=False)
    return buffer.getvalue()


def write_report(audit: Audit, out: Path) -> None:
    """``report.json``, ``report.html`` and ``nearest.png`` in ``out``, each written atomically,
    the drawing of each cross-split pair verified by features that the page shows
    (``visits/``) and the films the page's pair views open (``films/``; those of an earlier
    audit removed after the page)."""
    audit.visits = write_drawings(
        audit.visits,
        shown_visits(audit.visits),
        audit.visit_fits,
        lambda i: audit.image_bytes(audit.films[i]),
        out,
    )
    write_json(out / "report.json", report_json(audit))
    histogram = nearest_png(audit)
    write_bytes(out / "nearest.png", histogram)
    page = report_page(audit, split_figures(audit), histogram)
    for name, data in page.films.items():
        write_bytes(out / name, data)
    write_bytes(out / "report.html", page.html.encode("utf-8"))
    films = out / FILMS_FOLDER
    for stale in sorted(films.iterdir()) if films.is_dir() else []:
        if f"{FILMS_FOLDER}/{stale.name}" not in page.films:
            stale.unlink()


def print_summary(audit: Audit, out: Path, console: Console) -> None:
    """The audit's findings on the console: visits of one patient first (those the page
    shows, with their drawings), then the curator's notes and a table of the splits."""
    shown = shown_visits(audit.patient_visits)
    for visit in shown:  # first: no hash distance shows these
        a, b = audit.films[visit.a], audit.films[visit.b]
        how = f"{visit.inliers} matched features, share {visit.share}; {out / visit.drawing}"
        if visit.decided:
            how = f"the curator: {escape(visit.decided)}"
        console.print(
            f"[red]PATIENT[/red] visit of one patient across splits: {a.split} {a.film_id} / "
            f"{b.split} {b.film_id} ({how})",
            highlight=False,
        )
    if len(audit.patient_visits) > len(shown):
        more = len(audit.patient_visits) - len(shown)
        console.print(
            f"[red]PATIENT[/red] and {more} more visits of one patient across splits: "
            f"{out / 'report.json'}",
            highlight=False,
        )
    for note in audit.decision_notes:
        console.print(f"note: {note}", highlight=False, markup=False)
    figures = split_figures(audit)
    table = Table(title="Splits")
    for column in ("split", "films", "lesions", "grades", "lesion-free", "nearest to train"):
        table.add_column(column)
    for split, entry in figures.items():
        nearest = entry.get("nearest_to_train")
        table.add_row(
            split,
            str(entry["films"]),
            str(entry.get("lesions", "")),
            ", ".join(f"{g}: {n}" for g, n in entry.get("grades", {}).items()),
            str(entry.get("lesion_free", "")),
            f"min {nearest['min']}, median {nearest['median']:g}" if nearest else "",
        )
    console.print(table)
    if is_synthetic(build_of(audit.target)):
        console.print(SAMPLE_BANNER, style="bold yellow", highlight=False)
    if audit.findings:
        for finding in audit.findings:
            console.print(f"[red]LEAK/HINT[/red] {finding}", highlight=False)
    elif audit.patient_visits:
        console.print(
            f"[red]not clean:[/red] {len(audit.patient_visits)} visits of one patient cross "
            "splits (listed above); no other leakage or hint found.",
            highlight=False,
        )
    else:
        console.print("[green]clean:[/green] no leakage or hint found.")
    console.print(f"report: {out / 'report.html'}", highlight=False)
