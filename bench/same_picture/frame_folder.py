"""A folder of real films with altered copies, and the frame check's jobs over it: what
``bench.same_picture.step_cost frames`` times the frame check on.

Each real film (the development films upscaled to archive sizes, and the archive-sized grey
ones; read in place from ``../shared/realfilms-dev``, never copied into the repository) is
written with every alteration of ``bench.same_picture.alterations`` and one simulated visit,
as JPEG files in one folder. The folder is made once and reused (a file records what it
holds), so that several runs, of several versions of the check, time the same films."""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from bench.common.real_films import REAL_FILMS, upscaled
from bench.same_picture.alterations import ALTERATIONS, QUALITY, jpeg, simulated_visit
from curation.core.atomic import write_bytes
from curation.core.parallel import ordered_map
from curation.core.store import ArrayStore
from curation.features.features import FEATURES_VERSION, stored_features
from curation.features.shortlist import MIN_VOTES, pair_votes, shortlisted, voter_counts
from curation.same_picture import frame_check
from curation.same_picture.candidates import crop_candidates
from curation.same_picture.frame_step import FrameJob
from curation.same_picture.frame_store import FeaturesJob, features_job

ARCHIVE_FILMS = REAL_FILMS.parent / "films-native"
CONTENTS = "folder.json"  # what the folder was made of
FEATURES = "features"  # the folder's features store, as a build's (``frame_store``)


@dataclass(frozen=True)
class SourceFilm:
    """One real film to write with its copies: ``upscale`` for a development film."""

    name: str
    path: str
    upscale: bool
    seed: int


def write_family(film: SourceFilm, folder: Path) -> None:
    """The film, each of its altered copies and a simulated visit, as JPEG files."""
    grey = np.asarray(Image.open(io.BytesIO(Path(film.path).read_bytes())).convert("L"))
    if film.upscale:
        grey = upscaled(grey, film.seed)
    write_bytes(folder / f"{film.name}.jpg", jpeg(grey, 92))
    for number, alter in enumerate(ALTERATIONS.values()):
        picture, quality, mode = alter(grey)
        write_bytes(folder / f"{film.name}-{number:02d}.jpg", jpeg(picture, quality, mode))
    visit = jpeg(simulated_visit(grey, film.seed), QUALITY)
    write_bytes(folder / f"{film.name}-visit.jpg", visit)


def _write(job: tuple[SourceFilm, str]) -> None:
    write_family(job[0], Path(job[1]))


def folder_of_copies(folder: Path, films: int, archive: int, workers: int = 2) -> list[str]:
    """The JPEG files of ``folder``, in name order, made there first unless it already holds
    the first ``films`` development films (upscaled) and ``archive`` archive-sized films
    with their copies."""
    sources = [
        SourceFilm(f"up{index:03d}", str(path), True, index)
        for index, path in enumerate(sorted(REAL_FILMS.glob("*.jpg"))[:films])
    ] + [
        SourceFilm(f"arch{index:03d}", str(path), False, index)
        for index, path in enumerate(sorted(ARCHIVE_FILMS.glob("*.jpg"))[:archive])
    ]
    contents = json.dumps([s.__dict__ for s in sources], sort_keys=True)
    marker = folder / CONTENTS
    if not marker.is_file() or marker.read_text() != contents:
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("*.jpg"):
            old.unlink()
        list(ordered_map(_write, [(s, str(folder)) for s in sources], workers, 1))
        write_bytes(marker, contents.encode())
    return sorted(str(path) for path in folder.glob("*.jpg"))


def shortlisted_jobs(paths: list[str], workers: int = 2) -> list[FrameJob]:
    """The frame check's jobs as the frame step makes them (``frame_pairs``): every pair the
    feature shortlist and the crop path propose, the films' features in a store beside them.
    Unlike a build, pairs the whole-frame check has already joined are checked too."""
    shas = [hashlib.sha256(Path(path).read_bytes()).hexdigest() for path in paths]
    store = ArrayStore(Path(paths[0]).parent / FEATURES, FEATURES_VERSION)
    jobs = [FeaturesJob(path, sha, store) for path, sha in zip(paths, shas, strict=True)]
    list(ordered_map(features_job, jobs, workers))
    features = [stored_features(store, sha, path) for path, sha in zip(paths, shas, strict=True)]
    votes = pair_votes(features, MIN_VOTES)
    pairs = shortlisted(voter_counts(features), votes, frame_check.SHORTLIST_PER_FILM)
    pairs += crop_candidates(votes, pairs)
    return [FrameJob("", paths[i], paths[j], shas[i], shas[j], store) for i, j in pairs]
