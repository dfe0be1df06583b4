"""Visits planted after every other file: realistic revisits of a few single films
(``curation.drawing.revisits.revisit``, filed as originals under higher numbers) and
one large burned-in label shared by two films of different patients.

A revisited film's patient is given its trabecular texture
(``curation.drawing.trabecular``) before anything is rendered: a revisit is found by the
bone's fine structure, which the drawing alone lacks. So that film and every file drawn from
its patient (its copies) change with it; no other file does.

They draw from a generator of their own and take stems only after every other file has
taken its own, so nothing planned before them moves. Their annotation files take no quirks
(those draw from the planner's generator): each names its own film.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from curation.drawing.render import Output
from curation.drawing.trabecular import with_trabecular_texture
from curation.sample.annotations import Annotation, objects_of
from curation.sample.layout import ORIGINAL_DIR, ORIGINAL_FOLDER
from curation.sample.planner import Film, Planner

REVISITED_FILMS = 3
LABELLED_FILMS = 2
_OWN_STREAM = 30_000  # the planted visits' generator: [seed, _OWN_STREAM]
_TEXTURE_STREAM = 30_001  # a revisited patient's texture: [seed, _TEXTURE_STREAM, its stem]


def plant_visits(planner: Planner, seed: int) -> None:
    """Plant ``REVISITED_FILMS`` realistic revisits (``planner.revisits``: source, revisit) of
    single films without a patient number (their patients textured), and one burned-in label
    on ``LABELLED_FILMS`` others of which no copy was made (``planner.shared_label``; none
    when the archive is too small to have them: a copy of a labelled film would lack the
    label)."""
    rng = np.random.default_rng([seed, _OWN_STREAM])
    copied = {c.source for c in (*planner.augmented, *planner.among, *planner.held_out)}
    unnumbered = sorted(
        (f for f in planner.singles if f.stem not in planner.patient_numbers),
        key=lambda f: f.stem,
    )
    drawn = [unnumbered[i] for i in rng.permutation(len(unnumbered))]
    uncopied = [f for f in drawn if f.stem not in copied]
    labelled = uncopied[:LABELLED_FILMS] if len(uncopied) >= LABELLED_FILMS else []
    for film in [f for f in drawn if f.stem not in {g.stem for g in labelled}][:REVISITED_FILMS]:
        stem = planner.stem_beside(film.stem, lower=False)
        # A single's one shot is its patient's canvas, centred and unposed: texturing the
        # shot is texturing the patient.
        lows = film.family.lows
        lows[film.shot] = with_trabecular_texture(
            lows[film.shot], (seed, _TEXTURE_STREAM, int(film.stem))
        )
        film.family.outputs.append(
            dataclasses.replace(
                _output_of(film), arcname=f"{ORIGINAL_DIR}/{stem}.jpg", transform="revisit",
                param=float(rng.integers(0, 2**31)),
            )
        )  # fmt: skip
        width, height = film.family.size
        note = Annotation(stem, ORIGINAL_FOLDER, width, height, 3, objects_of(film.boxes))
        note.filename = f"{stem}.jpg"
        planner.held_out_notes.append(note)
        planner.clean.append(dataclasses.replace(film, stem=stem))
        planner.revisits.append((film.stem, stem))
    label_seed = float(rng.integers(0, 2**31))
    for film in labelled:
        outputs = film.family.outputs
        at = outputs.index(_output_of(film))
        outputs[at] = dataclasses.replace(
            outputs[at], transform="burned-in label", param=label_seed
        )
    planner.shared_label = tuple(sorted(f.stem for f in labelled))


def _output_of(film: Film) -> Output:
    """The file ``film`` is filed as among the originals."""
    return next(o for o in film.family.outputs if o.arcname == f"{ORIGINAL_DIR}/{film.stem}.jpg")
