"""The audit of a build reads the curator's decisions (``BUILD/decisions.toml``,
``curation.decisions``): films declared one patient that sit in different splits are listed
as visits of one patient across splits (``--strict-patients`` fails on them, as on visits
matched by features); a same-picture finding between two films declared not the same picture
is set aside, and a note says so."""

from __future__ import annotations

from pathlib import Path

from curation.decisions import read_decisions
from curation.leaks.leakage import Audit
from curation.leaks.visits import CrossSplitMatch


def apply_decisions(audit: Audit, folder: Path) -> None:
    """Apply the decisions file of the audited folder to ``audit`` (nothing without one)."""
    decisions = read_decisions(folder)
    if decisions.sha256 is None:
        return
    films = audit.films
    reasons = {frozenset(d.films): d.reason for d in decisions.of("not_same_picture")}

    def set_aside(a: int, b: int, finding: str) -> bool:
        pair = frozenset((films[a].film_id, films[b].film_id))
        if pair not in reasons:
            return False
        audit.decision_notes.append(
            f"{films[a].film_id} ({films[a].split}) and {films[b].film_id} ({films[b].split}): "
            f"{finding} set aside, the curator declared them not the same picture "
            f"({reasons[pair]})."
        )
        return True

    audit.pairs = [
        p for p in audit.pairs if not set_aside(p.a, p.b, f"{p.method} distance {p.distance}")
    ]
    audit.turned = [t for t in audit.turned if not set_aside(t.a, t.b, f"same picture {t.view}")]
    audit.visits = [
        v
        for v in audit.visits
        if not (v.same_picture and set_aside(v.a, v.b, "same picture under another frame"))
    ]
    audit.visits += _one_patient_across(audit, decisions.patients)


def _one_patient_across(
    audit: Audit, patients: list[tuple[str, str, str]]
) -> list[CrossSplitMatch]:
    """The curator's one-patient pairs whose films sit in different splits, earlier split
    first (films the dataset does not hold are not the audit's to judge)."""
    index = {film.film_id: n for n, film in enumerate(audit.films)}
    order = {split: n for n, split in enumerate(audit.splits)}
    found = []
    for first, second, reason in patients:
        if first not in index or second not in index:
            continue
        a, b = sorted((index[first], index[second]), key=lambda n: order[audit.films[n].split])
        if audit.films[a].split != audit.films[b].split:
            found.append(CrossSplitMatch(a, b, 0, 0, 0.0, False, decided=reason))
    return found
