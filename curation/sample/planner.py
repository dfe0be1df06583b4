"""Planning (main process): which patients are drawn, under which stems, with which XML.

The drawing order fixes the whole archive, so every choice comes from the one seeded
generator, in a fixed order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

import curation.drawing.anatomy as anatomy
import curation.drawing.encoders as encoders
from curation.drawing.render import Exposure, Output
from curation.drawing.sizes import Box
from curation.sample.annotations import Annotation, objects_of
from curation.sample.geometry import disagree, jitter
from curation.sample.layout import ORIGINAL_DIR, ORIGINAL_FOLDER
from curation.sample.truth import AugmentedCopy, BadInput, DoubleAnnotated

_NUMBERED_SINGLES = 0.12
_TEMPLATE_FILMS = 25


@dataclass
class Family:
    """Every file drawn from one patient; frozen into a ``RenderJob`` at the end."""

    lows: list[np.ndarray]
    grain_offsets: list[tuple[int, int]]
    size: tuple[int, int]
    outputs: list[Output]


@dataclass(frozen=True)
class Film:
    """A clean original as planned: where its pixels come from and what its XML states."""

    stem: str
    family: Family
    shot: int
    mode: str
    quality: int
    boxes: tuple[Box, ...]
    exposure: Exposure = field(default_factory=Exposure)


class Planner:
    """Draws every patient and decides every file of the archive."""

    def __init__(self, seed: int, prefixes: int) -> None:
        self.rng = np.random.default_rng(seed)
        self._wider = np.random.default_rng([seed, 10_000])
        self.prefixes = self._prefix_pool(prefixes)
        self.looks = anatomy.draw_looks(self.rng)
        self.families: list[Family] = []
        self.annotations: list[Annotation] = []
        self.loose_files: dict[str, bytes] = {}
        self.clean: list[Film] = []
        self.singles: list[Film] = []
        self.augmented: list[AugmentedCopy] = []
        self.among: list[AugmentedCopy] = []
        self.held_out: list[AugmentedCopy] = []  # cases reviewers tried on held-out films
        # Annotation files planted after the quirks were drawn: the held-out cases' and the
        # planted visits' (``curation.sample.plants.planted_visits``).
        self.held_out_notes: list[Annotation] = []
        self.doubles: list[DoubleAnnotated] = []
        self.groups: list[tuple[str, ...]] = []
        self.distant: list[tuple[str, ...]] = []
        self.template: tuple[str, ...] = ()
        self.revisits: list[tuple[str, str]] = []  # realistic revisits: (source, revisit)
        self.shared_label: tuple[str, ...] = ()  # films of different patients, one label
        self.patient_numbers: dict[str, int] = {}
        self.bad: list[BadInput] = []
        self._used_numbers: set[int] = set()

    def _prefix_pool(self, count: int) -> list[str]:
        """Distinct stem numbers, each written with four digits (5-digit stems) or with a
        leading zero (6-digit stems), in random order."""
        if count > 9999:
            raise ValueError(f"the archive's stems allow at most 9999 films, {count} needed")
        numbers = self.rng.permutation(np.arange(1, 10_000))[:count]
        zero = self.rng.random(count) < 0.35
        return [f"0{n:04d}" if z else f"{n:04d}" for n, z in zip(numbers, zero, strict=True)]

    def next_stem(self) -> str:
        """A fresh original stem (ending in 1). Once the four-digit numbers are used up (a
        scale corpus of more than 9,999 films), five-digit ones follow: 6-digit stems the
        index accepts, distinct as numbers from every earlier stem. They come from their own
        generator, so an archive that fits the four-digit numbers is drawn exactly as before."""
        if not self.prefixes:
            self.prefixes = [f"{n}" for n in self._wider.permutation(np.arange(10_000, 100_000))]
        return self.prefixes.pop() + "1"

    def stem_beside(self, source: str, lower: bool) -> str:
        """A fresh original stem whose number is lower (or higher) than ``source``'s, when the
        pool still has one; otherwise any fresh stem (the truth records which it was)."""
        number = int(source[:-1])
        for index in range(len(self.prefixes) - 1, -1, -1):
            if (int(self.prefixes[index]) < number) == lower:
                return self.prefixes.pop(index) + "1"
        return self.next_stem()

    def grain(self) -> tuple[int, int]:
        """Where a film's grain is cut from the shared noise tile."""
        return int(self.rng.integers(0, 150)), int(self.rng.integers(0, 200))

    def _patient_number(self) -> int:
        while True:
            number = int(self.rng.integers(1, 1_000_000))
            if number not in self._used_numbers:
                self._used_numbers.add(number)
                return number

    def _number(self, stems: tuple[str, ...] | list[str]) -> None:
        number = self._patient_number()
        for stem in stems:
            self.patient_numbers[stem] = number

    def patient(
        self, visits: int = 1, distant: bool = False
    ) -> tuple[anatomy.Patient, list[anatomy.Shot], Family]:
        """A freshly drawn patient with ``visits`` shots (close or years apart)."""
        patient = anatomy.draw_patient(self.rng, self.looks)
        if distant:
            shots = anatomy.distant_shots(self.rng, visits)
        elif visits > 1:
            shots = anatomy.lookalike_shots(self.rng, visits)
        else:
            shots = [anatomy.single_shot(self.rng)]
        lows = [anatomy.expose(patient, shot) for shot in shots]
        if distant:
            lows = [lows[0], *(anatomy.changed_soft_tissue(self.rng, low) for low in lows[1:])]
        family = Family(
            lows=lows,
            grain_offsets=[self.grain() for _ in shots],
            size=(patient.width, patient.height),
            outputs=[],
        )
        self.families.append(family)
        return patient, shots, family

    def original(
        self,
        family: Family,
        shot: int,
        boxes: tuple[Box, ...],
        *,
        mode: str | None = None,
        encoding: str = encoders.SYSTEM,
    ) -> Film:
        """File one shot among the originals, by default with the imaging system's signature
        and a drawn mode (drawn even when ``mode`` is given, so the draws that follow stay)."""
        stem = self.next_stem()
        drawn = str(self.rng.choice(["L", "RGB"]))
        film = Film(
            stem,
            family,
            shot,
            drawn if mode is None else mode,
            int(self.rng.integers(75, 89)),
            boxes,
        )
        width, height = family.size
        family.outputs.append(
            Output(f"{ORIGINAL_DIR}/{stem}.jpg", shot, film.mode, film.quality, encoding=encoding)
        )
        self.annotations.append(
            Annotation(stem, ORIGINAL_FOLDER, width, height, 3, objects_of(boxes))
        )
        return film

    def plan_clean(self, films: int) -> None:
        """Singles, re-filings, look-alike visits and distant visits: ``films`` originals."""
        doubles = max(3, films // 20)
        group_sizes = [int(self.rng.integers(2, 5)) for _ in range(max(2, films // 30))]
        distant_sizes = [int(self.rng.integers(2, 4)) for _ in range(max(2, films // 40))]
        singles = films - 2 * doubles - sum(group_sizes) - sum(distant_sizes)
        for _ in range(singles):
            patient, shots, family = self.patient()
            film = self.original(family, 0, anatomy.boxes_of(patient, shots[0]))
            self.clean.append(film)
            self.singles.append(film)
            if self.rng.random() < _NUMBERED_SINGLES:
                self._number([film.stem])
        for index in range(doubles):
            self._refiling(index)
        for index, size in enumerate(group_sizes):
            self.groups.append(self._visits(size, distant=False))
            if index % 2 == 0:
                self._number(self.groups[-1])
        for size in distant_sizes:
            self.distant.append(self._visits(size, distant=True))
            self._number(self.distant[-1])
        unnumbered = [f.stem for f in self.singles if f.stem not in self.patient_numbers]
        count = min(_TEMPLATE_FILMS, max(3, films // 8), len(unnumbered))
        self.template = tuple(sorted(unnumbered[:count]))
        self._number(self.template)

    def _visits(self, size: int, distant: bool) -> tuple[str, ...]:
        patient, shots, family = self.patient(visits=size, distant=distant)
        members = [
            self.original(family, i, anatomy.boxes_of(patient, shot))
            for i, shot in enumerate(shots)
        ]
        self.clean.extend(members)
        return tuple(m.stem for m in members)

    def _refiling(self, index: int) -> None:
        """One radiograph filed twice, each filing with its own reader's boxes; the second
        identical in bytes, re-encoded, or re-exposed and re-encoded."""
        patient, shots, family = self.patient()
        width, height = family.size
        truth_boxes = anatomy.boxes_of(patient, shots[0])
        first = self.original(family, 0, jitter(self.rng, truth_boxes, width, height))
        encoding = ("identical", "reencoded", "reexposed")[index % 3]
        exposure, quality = Exposure(), first.quality
        if encoding != "identical":
            quality = int(np.clip(first.quality + self.rng.choice([-1, 1]) * 8, 60, 95))
        if encoding == "reexposed":
            exposure = Exposure(
                offset=round(float(self.rng.uniform(-8, 8)), 1),
                gain=round(float(self.rng.uniform(0.9, 1.1)), 3),
                gamma=round(float(self.rng.uniform(0.85, 1.15)), 3),
            )
        second_stem = self.next_stem()
        arcname = f"{ORIGINAL_DIR}/{second_stem}.jpg"
        if encoding == "identical":
            output = Output(arcname, 0, copy_of=f"{ORIGINAL_DIR}/{first.stem}.jpg")
        else:
            output = Output(arcname, 0, first.mode, quality, exposure=exposure)
        opinion = disagree(self.rng, truth_boxes) if index % 3 == 1 else truth_boxes
        second = Film(
            second_stem,
            family,
            0,
            first.mode,
            quality,
            jitter(self.rng, opinion, width, height),
            exposure,
        )
        family.outputs.append(output)
        self.annotations.append(
            Annotation(second_stem, ORIGINAL_FOLDER, width, height, 3, objects_of(second.boxes))
        )
        self.clean.extend([first, second])
        self.doubles.append(
            DoubleAnnotated(
                first.stem,
                second_stem,
                encoding,
                exposure.offset,
                exposure.gain,
                exposure.gamma,
                first.quality,
                quality,
            )
        )
        if index % 2 == 0:
            self._number([first.stem, second_stem])

    @property
    def patient_groups(self) -> tuple[tuple[str, ...], ...]:
        """Every set of originals known to show one patient (re-filings and visits)."""
        pairs = [(pair.first, pair.second) for pair in self.doubles]
        groups = (*pairs, *self.groups, *self.distant, *self.revisits)
        return tuple(sorted(tuple(sorted(g)) for g in groups))
