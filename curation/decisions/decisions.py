"""``BUILD/decisions.toml``, read and checked: each decision is a TOML array-of-tables entry,

    [[not_same_picture]]          # two films the same-picture step must never group
    films = ["00011", "00021"]
    reason = "two visits: the filling differs"

    [[one_patient]]               # films joined in one look-alike component (one split)
    films = ["00031", "00041", "00051"]
    reason = "same patient, named on the request form"

    [[reject]]                    # a film left out of the dataset, with the curator's reason
    film = "00061"
    reason = "film of a child, outside the study"

Film ids are the films' file stems (the ``film_id`` of ``manifest.parquet``). A file that is
not TOML, or an entry that is not one of these shapes, is refused in one sentence naming the
file and the problem; so are film ids the source does not hold (``check_films``).
"""

from __future__ import annotations

import hashlib
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from curation.core.errors import PericurateError

DECISIONS_NAME = "decisions.toml"
NOT_SAME_PICTURE, ONE_PATIENT, REJECT = "not_same_picture", "one_patient", "reject"
KINDS = (NOT_SAME_PICTURE, ONE_PATIENT, REJECT)
# The reason class of a film the curator rejected (``curation.core.vocabulary.reason_text``).
CURATOR_REJECTED = "rejected by the curator"


class DecisionsError(PericurateError):
    """The decisions file cannot be read or names films the source does not hold."""


@dataclass(frozen=True)
class Decision:
    """One decision: its kind (``KINDS``), the films it names, and the curator's reason."""

    kind: str
    films: tuple[str, ...]
    reason: str

    def sentence(self) -> str:
        """The decision in words, for the card and the review page."""
        films = ", ".join(self.films)
        what = {
            NOT_SAME_PICTURE: f"{films}: not the same picture (both kept)",
            ONE_PATIENT: f"{films}: one patient (kept in one split)",
            REJECT: f"{films}: rejected",
        }[self.kind]
        return f"{what}; {self.reason}"


@dataclass(frozen=True)
class Decisions:
    """The decisions of one build; ``sha256`` is ``None`` when there is no decisions file."""

    path: Path
    sha256: str | None = None
    entries: tuple[Decision, ...] = ()

    def of(self, kind: str) -> list[Decision]:
        """The decisions of one kind, in file order."""
        return [d for d in self.entries if d.kind == kind]

    @property
    def apart(self) -> set[frozenset[str]]:
        """The pairs of films declared not the same picture."""
        return {frozenset(d.films) for d in self.of(NOT_SAME_PICTURE)}

    @property
    def rejected(self) -> dict[str, str]:
        """Film id -> the curator's reason for rejecting it."""
        return {d.films[0]: d.reason for d in self.of(REJECT)}

    @property
    def patients(self) -> list[tuple[str, str, str]]:
        """Each one-patient decision as links ``(first film, other film, reason)``."""
        return [
            (d.films[0], other, d.reason) for d in self.of(ONE_PATIENT) for other in d.films[1:]
        ]

    def film_ids(self) -> set[str]:
        """Every film any decision names."""
        return {film for d in self.entries for film in d.films}

    def check_films(self, known: set[str]) -> None:
        """Refuse decisions naming films that are not in the source."""
        unknown = sorted(self.film_ids() - known)
        if unknown:
            raise DecisionsError(
                f"{self.path}: no film with the id {', '.join(unknown)} in the source (film ids "
                "are the films' file stems, as in manifest.parquet)."
            )

    def record(self) -> dict[str, Any] | None:
        """What ``curation.json`` records: the file's sha256 and every decision, by kind;
        ``None`` without a decisions file."""
        if self.sha256 is None:
            return None
        recorded: dict[str, Any] = {"file": DECISIONS_NAME, "sha256": self.sha256}
        for kind in KINDS:
            recorded[kind] = [{"films": list(d.films), "reason": d.reason} for d in self.of(kind)]
        return recorded

    def sentences(self) -> list[str]:
        """Each decision as one sentence, in file order (as the review page lists them)."""
        return [d.sentence() for d in self.entries]


def recorded_decisions(record: dict[str, Any] | None) -> list[Decision]:
    """The decisions ``curation.json`` recorded (``Decisions.record``), in their order."""
    if record is None:
        return []
    return [
        Decision(kind, tuple(entry["films"]), str(entry["reason"]))
        for kind in KINDS
        for entry in record.get(kind, [])
    ]


def read_decisions(build: Path) -> Decisions:
    """The decisions of the build folder ``build`` (none when it has no decisions file)."""
    path = build / DECISIONS_NAME
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return Decisions(path)
    except OSError as error:
        raise DecisionsError(f"{path}: cannot be read ({error.strerror}).") from None
    try:
        table = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise DecisionsError(f"{path}: not UTF-8 text.") from None
    except tomllib.TOMLDecodeError as error:
        raise DecisionsError(f"{path}: not valid TOML ({error}).") from None
    entries = _entries(path, table)
    return Decisions(path, hashlib.sha256(data).hexdigest(), entries)


def _entries(path: Path, table: dict[str, Any]) -> tuple[Decision, ...]:
    unknown = sorted(set(table) - set(KINDS))
    if unknown:
        raise DecisionsError(
            f"{path}: unknown section {unknown[0]!r}; the sections are [[not_same_picture]], "
            "[[one_patient]] and [[reject]]."
        )
    entries = []
    for kind in KINDS:
        found = table.get(kind, [])
        if not isinstance(found, list) or not all(isinstance(e, dict) for e in found):
            raise DecisionsError(f"{path}: {kind} must be written [[{kind}]], one per decision.")
        entries += [_entry(path, kind, number, entry) for number, entry in enumerate(found, 1)]
    rejected = [d.films[0] for d in entries if d.kind == REJECT]
    twice = sorted({film for film in rejected if rejected.count(film) > 1})
    if twice:
        raise DecisionsError(f"{path}: film {twice[0]} is rejected twice.")
    return tuple(entries)


def _entry(path: Path, kind: str, number: int, entry: dict[str, Any]) -> Decision:
    where = f"{path}: [[{kind}]] number {number}"
    films_key = "film" if kind == REJECT else "films"
    extra = sorted(set(entry) - {films_key, "reason"})
    if extra:
        raise DecisionsError(f"{where} has an unknown key {extra[0]!r}.")
    reason = entry.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise DecisionsError(f'{where} needs a reason = "..." (the curator\'s words).')
    films = entry.get(films_key)
    if kind == REJECT:
        films = [films]
    if not isinstance(films, list) or not all(isinstance(f, str) and f for f in films):
        shape = 'film = "ID"' if kind == REJECT else 'films = ["ID", "ID"]'
        raise DecisionsError(f"{where} needs {shape} (film ids are quoted strings).")
    if kind != REJECT and (len(set(films)) != len(films) or len(films) < 2):
        raise DecisionsError(f"{where} must name at least two different films.")
    if kind == NOT_SAME_PICTURE and len(films) != 2:
        raise DecisionsError(f"{where} must name exactly two films (one pair per decision).")
    return Decision(kind, tuple(films), reason.strip())
