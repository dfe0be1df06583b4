"""The ground truth of a sample archive: what every planted file really is.

It is written next to the zip as ``<stem>.truth.json`` and never inside it, and it never
carries a patient number (only which films share one).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from curation.drawing.sizes import Box


@dataclass(frozen=True)
class AugmentedCopy:
    """An augmented film: its stem, the original it was made from, and exactly how."""

    stem: str
    source: str
    kind: str
    detail: str
    transform: str = ""
    param: float = 0.0
    number_lower: bool = False
    encoder: str = ""
    filed_copy_of: str = ""


@dataclass(frozen=True)
class DoubleAnnotated:
    """One radiograph filed under two original stems (a re-filing), each with its own boxes."""

    first: str
    second: str
    encoding: str
    offset: float = 0.0
    gain: float = 1.0
    gamma: float = 1.0
    first_quality: int = 0
    second_quality: int = 0


@dataclass(frozen=True)
class BadInput:
    """A planted file the chain must reject, with why."""

    path: str
    stem: str
    reason: str


@dataclass(frozen=True)
class FilmTruth:
    """What an original film really is: size, saved mode, its true boxes (pixels, ordered)
    and the encoder that wrote it."""

    width: int
    height: int
    mode: str
    lesions: tuple[Box, ...]
    encoder: str = ""


@dataclass(frozen=True)
class SampleTruth:
    """Ground truth of a sample archive; never stored inside the zip."""

    seed: int
    films: int
    originals: tuple[str, ...]
    film_truth: dict[str, FilmTruth]
    augmented: tuple[AugmentedCopy, ...]
    augmented_among_originals: tuple[AugmentedCopy, ...]
    double_annotated: tuple[DoubleAnnotated, ...]
    lookalike_groups: tuple[tuple[str, ...], ...]
    bad_inputs: tuple[BadInput, ...]
    junk_archives: tuple[str, ...]
    reversed_boxes: tuple[str, ...]
    patient_number_in_filename: tuple[str, ...]
    distant_visit_groups: tuple[tuple[str, ...], ...] = ()
    patient_groups: tuple[tuple[str, ...], ...] = ()
    template_number_films: tuple[str, ...] = ()
    all_copies_among_originals: bool = False
    encoders: dict[str, str] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    # Planted after every other file: copies as reviewers made them on held-out films, a
    # re-filing with a drawn lesion, a copy found only in the augmentation folder.
    held_out: tuple[AugmentedCopy, ...] = ()
    # Planted last (``curation.sample.plants.planted_visits``): realistic revisits (source, revisit)
    # and the films of different patients that share one burned-in label.
    realistic_visits: tuple[tuple[str, ...], ...] = ()
    shared_label_films: tuple[str, ...] = ()

    def to_json(self) -> str:
        """The truth as JSON text, keys sorted, so the same sample writes the same bytes."""
        return json.dumps(asdict(self), indent=1, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> SampleTruth:
        """The truth ``to_json`` wrote."""
        raw = json.loads(text)

        def groups(key: str) -> tuple[tuple[str, ...], ...]:
            return tuple(tuple(group) for group in raw[key])

        return cls(
            seed=raw["seed"],
            films=raw["films"],
            originals=tuple(raw["originals"]),
            film_truth={
                stem: FilmTruth(
                    width=f["width"],
                    height=f["height"],
                    mode=f["mode"],
                    lesions=tuple(tuple(lesion) for lesion in f["lesions"]),
                    encoder=f["encoder"],
                )
                for stem, f in raw["film_truth"].items()
            },
            augmented=tuple(AugmentedCopy(**a) for a in raw["augmented"]),
            augmented_among_originals=tuple(
                AugmentedCopy(**a) for a in raw["augmented_among_originals"]
            ),
            double_annotated=tuple(DoubleAnnotated(**d) for d in raw["double_annotated"]),
            lookalike_groups=groups("lookalike_groups"),
            bad_inputs=tuple(BadInput(**b) for b in raw["bad_inputs"]),
            junk_archives=tuple(raw["junk_archives"]),
            reversed_boxes=tuple(raw["reversed_boxes"]),
            patient_number_in_filename=tuple(raw["patient_number_in_filename"]),
            distant_visit_groups=groups("distant_visit_groups"),
            patient_groups=groups("patient_groups"),
            template_number_films=tuple(raw["template_number_films"]),
            all_copies_among_originals=raw["all_copies_among_originals"],
            encoders=dict(raw["encoders"]),
            notes=dict(raw["notes"]),
            held_out=tuple(AugmentedCopy(**a) for a in raw.get("held_out", ())),
            realistic_visits=tuple(tuple(pair) for pair in raw.get("realistic_visits", ())),
            shared_label_films=tuple(raw.get("shared_label_films", ())),
        )


def truth_path(dest_zip: Path) -> Path:
    """Where the truth of ``dest_zip`` lives: ``<stem>.truth.json`` next to it."""
    return dest_zip.with_name(f"{dest_zip.stem}.truth.json")
