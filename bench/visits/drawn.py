"""``python -m bench.visits.drawn``: the sample's drawn revisits against real ones: how many grid
cells (``curation.visits.verification``) a drawn realistic revisit covers, with and without its
patient's trabecular texture (``curation.drawing.trabecular``), and what distinct drawn films
and films sharing a burned-in label reach, at the working side in use and at smaller ones.

Two measurements, both rendered exactly as the sample renders its files
(``curation.drawing.render``: upscaled, grained, JPEG with the imaging system's signature):

- drawn patients (``--patients``, drawn as the sample draws a single film): each filed once,
  textured as the sample textures a revisited patient and, beside it, untextured (the drawing
  alone); ``--seeds`` revisits of each (``curation.drawing.revisits.revisit``); every pair of
  distinct films; every pair carrying the sample's large burned-in label; consecutive
  patients carrying one of the real-film bench's labels, rulers or markers, small to large;
- the sample's own planted visits (``curation.sample.plants.planted_visits``, the sample of
  ``--sample-films`` originals, seed 0 as ``make splits`` writes it): each planted revisit,
  and every other pair of the planted films (different patients, the shared label).

Real revisits cover 47 cells or more and real distinct films 5 or fewer (docs/margins.md,
"Visits"): a drawn revisit should reach at least 40 and a distinct pair at most 5.
Writes ``bench/visits/drawn.json``.
"""

from __future__ import annotations

import argparse
import tempfile
import zipfile
from itertools import combinations
from multiprocessing import get_context
from pathlib import Path

import cv2
import numpy as np

import curation.drawing.anatomy as anatomy
import curation.drawing.encoders as encoders
from bench.visits.real import MARKS
from curation.core.atomic import write_json
from curation.drawing.render import Output, RenderJob, render
from curation.drawing.revisits import burned_in
from curation.drawing.trabecular import with_trabecular_texture
from curation.sample import ORIGINAL_DIR, write_sample_archive
from curation.visits.descriptors import (
    WORKING_SIDE,
    VisitFeatures,
    described_grey,
    visit_features,
)
from curation.visits.verification import MIN_CELLS, verify

RESULTS = Path(__file__).with_name("drawn.json")
SIDES = (WORKING_SIDE, 512, 384)  # px: the side in use and the smaller ones compared
SEED = 35
REVISIT_GOAL = 40  # cells a drawn revisit should reach (real ones reach 47 or more)
DISTINCT_GOAL = 5  # cells a distinct drawn pair should stay at or under (real ones do)
LABEL_SEED = 7  # one burned-in label, the same drawing on every labelled film


def _described(data: bytes) -> list[VisitFeatures]:
    """A film's bytes described at each of ``SIDES``, decoded as the visits step decodes."""
    grey, size = described_grey(data)
    return [visit_features(grey, size, side=side) for side in SIDES]


def _patient_job(job: tuple[int, bool, int]) -> dict[str, list[VisitFeatures]]:
    """One drawn patient's film, its revisits, its film with the sample's burned-in label and
    with each of the real-film bench's marks (``bench.visits.real.MARKS``, burned into the
    decoded film and written again at its quality), described at each side: the patient
    textured or not."""
    index, textured, seeds = job
    rng = np.random.default_rng([SEED, index])
    patient = anatomy.draw_patient(rng, anatomy.draw_looks(rng))
    low = anatomy.expose(patient, anatomy.single_shot(rng))
    if textured:
        low = with_trabecular_texture(low, (SEED, index))
    quality = int(rng.integers(75, 89))
    outputs = [
        Output("film", 0, quality=quality),
        Output("label", 0, quality=quality, transform="burned-in label", param=LABEL_SEED),
        *(
            Output(f"revisit{k}", 0, quality=quality, transform="revisit", param=1000 * index + k)
            for k in range(seeds)
        ),
    ]
    grain = (int(rng.integers(0, 150)), int(rng.integers(0, 200)))
    size = (patient.width, patient.height)
    files = render(RenderJob((low,), (grain,), size, tuple(outputs), SEED))
    grey = np.asarray(cv2.imdecode(np.frombuffer(files["film"], np.uint8), cv2.IMREAD_GRAYSCALE))
    for k, (kind, width) in enumerate(MARKS):
        marked = burned_in(grey, kind, width, LABEL_SEED + k)
        files[f"mark{k}"] = encoders.system_jpeg(marked, "L", quality)
    return {name: _described(data) for name, data in files.items()}


def _spread(values: list[int]) -> dict:
    array = np.asarray(values, float)
    return {"count": len(values), "min": int(array.min()), "median": float(np.median(array)),
            "max": int(array.max())} if len(values) else {}  # fmt: skip


def _scores(
    films: list[dict[str, list[VisitFeatures]]], at: int, seeds: int
) -> dict[str, list[int]]:
    """Cells of every revisit, every distinct pair and every labelled pair, at ``SIDES[at]``."""
    revisits = [
        verify(f["film"][at], f[f"revisit{k}"][at]).cells for f in films for k in range(seeds)
    ]
    pairs = list(combinations(range(len(films)), 2))
    distinct = [verify(films[i]["film"][at], films[j]["film"][at]).cells for i, j in pairs]
    labelled = [verify(films[i]["label"][at], films[j]["label"][at]).cells for i, j in pairs]
    marked = [
        verify(films[i][f"mark{k}"][at], films[i + 1][f"mark{k}"][at]).cells
        for k in range(len(MARKS))
        for i in range(len(films) - 1)
    ]
    return {"revisits": revisits, "distinct": distinct, "labelled": labelled, "marked": marked}


def drawn_patients(patients: int, seeds: int, workers: int) -> dict:
    """Revisits and distinct pairs of ``patients`` drawn patients, textured and untextured."""
    jobs = [(n, textured, seeds) for textured in (True, False) for n in range(patients)]
    with get_context("spawn").Pool(workers) as pool:
        described = pool.map(_patient_job, jobs)
    found: dict = {"patients": patients, "revisits_per_patient": seeds}
    halves = (("textured", described[:patients]), ("drawing_alone", described[patients:]))
    for name, films in halves:
        found[name] = {}
        for at, side in enumerate(SIDES):
            scores = _scores(films, at, seeds)
            found[name][f"side_{side}"] = {
                "revisit_cells": _spread(scores["revisits"]),
                "revisits_at_goal": sum(c >= REVISIT_GOAL for c in scores["revisits"]),
                "revisits_verified": sum(c >= MIN_CELLS for c in scores["revisits"]),
                "distinct_cells": _spread(scores["distinct"]),
                "distinct_over_goal": sum(c > DISTINCT_GOAL for c in scores["distinct"]),
                "labelled_cells": _spread(scores["labelled"]),
                "labelled_verified": sum(c >= MIN_CELLS for c in scores["labelled"]),
                "marked_cells": _spread(scores["marked"]),
                "marked_verified": sum(c >= MIN_CELLS for c in scores["marked"]),
            }
    return found


def planted(sample_films: int) -> dict:
    """The planted visits of the sample of ``sample_films`` originals (seed 0): each revisit's
    cells and the most any other pair of planted films reaches, at each side."""
    with tempfile.TemporaryDirectory(prefix="pericurate-drawn-") as scratch:
        dest = Path(scratch) / "sample.zip"
        truth = write_sample_archive(dest, films=sample_films)
        stems = [s for pair in truth.realistic_visits for s in pair] + list(
            truth.shared_label_films
        )
        with zipfile.ZipFile(dest) as archive:
            features = {s: _described(archive.read(f"{ORIGINAL_DIR}/{s}.jpg")) for s in stems}
    revisits = {frozenset(pair) for pair in truth.realistic_visits}
    found: dict = {"sample_films": sample_films, "planted_revisits": len(revisits)}
    for at, side in enumerate(SIDES):
        cells = {
            frozenset(pair): verify(features[pair[0]][at], features[pair[1]][at]).cells
            for pair in combinations(sorted(features), 2)
        }
        others = [c for pair, c in cells.items() if pair not in revisits]
        found[f"side_{side}"] = {
            "revisit_cells": sorted(cells[pair] for pair in revisits),
            "other_pairs_most_cells": max(others, default=0),
            "other_pairs": len(others),
        }
    return found


def measure(patients: int = 8, seeds: int = 4, sample_films: int = 200, workers: int = 2) -> dict:
    """Both measurements (see the module's docstring)."""
    return {
        "limit_in_use": MIN_CELLS,
        "goals": {"revisit_cells_at_least": REVISIT_GOAL, "distinct_cells_at_most": DISTINCT_GOAL},
        "drawn": drawn_patients(patients, seeds, workers),
        "planted": planted(sample_films),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--patients", type=int, default=8)
    parser.add_argument("--seeds", type=int, default=4, help="revisits drawn of each patient")
    parser.add_argument("--sample-films", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    found = measure(args.patients, args.seeds, args.sample_films, args.workers)
    write_json(RESULTS, found)
    for name in ("textured", "drawing_alone"):
        for side in SIDES:
            at = found["drawn"][name][f"side_{side}"]
            print(
                f"bench.visits.drawn ({name}, {side} px): revisit cells {at['revisit_cells']}, "
                f"distinct most {at['distinct_cells']['max']}, labelled most "
                f"{at['labelled_cells']['max']}, marked most {at['marked_cells']['max']}"
            )
    for side in SIDES:
        at = found["planted"][f"side_{side}"]
        print(
            f"bench.visits.drawn (planted, {side} px): revisits {at['revisit_cells']}, other "
            f"pairs most {at['other_pairs_most_cells']}"
        )


if __name__ == "__main__":
    main()
