"""The sample's planted visits (``curation.sample.plants.planted_visits``): realistic revisits of a
few single films and one large burned-in label on two films of different patients, planted last
so that nothing planned before them moves but the revisited patients' texture; the visits step
finds every revisit and never links the label. The build and the audit on them:
``tests/leaks/test_visits_across_splits.py``."""

from __future__ import annotations

import zipfile
from itertools import combinations
from pathlib import Path

import pytest

import curation.sample.archive as archive_module
from curation.api import find_visits
from curation.sample import ANNOTS_DIR, ORIGINAL_DIR, write_sample_archive
from curation.sample.plants.planted_visits import LABELLED_FILMS, REVISITED_FILMS
from curation.visits.descriptors import visit_features_of
from curation.visits.verification import MIN_CELLS, verify
from tests.sample_reading import SMALL_FILMS, SMALL_SEED, path_of


def test_planted_visits_are_recorded_and_move_nothing_planned_before(small_sample, tmp_path):
    dest, truth = small_sample
    assert len(truth.realistic_visits) == REVISITED_FILMS
    # The small sample copies every unnumbered single: no film is left for the label.
    assert truth.shared_label_films == ()
    revisits = {visit for _, visit in truth.realistic_visits}
    sources = {source for source, _ in truth.realistic_visits}
    assert revisits <= set(truth.originals) and sources <= set(truth.originals)
    assert not set(truth.shared_label_films) & (revisits | sources)
    assert all(tuple(sorted(pair)) in truth.patient_groups for pair in truth.realistic_visits)
    # The same archive without them: every other file is byte-identical.
    without = tmp_path / "without.zip"
    planted = archive_module.plant_visits
    try:
        archive_module.plant_visits = lambda planner, seed: None  # type: ignore[assignment]
        write_sample_archive(without, seed=SMALL_SEED, films=SMALL_FILMS)
    finally:
        archive_module.plant_visits = planted
    added = {f"{ORIGINAL_DIR}/{s}.jpg" for s in revisits} | {
        f"{ANNOTS_DIR}/{s}.xml" for s in revisits
    }
    labelled = {f"{ORIGINAL_DIR}/{s}.jpg" for s in truth.shared_label_films}
    # A revisited patient is textured: its film and every copy drawn from it change.
    copies = (*truth.augmented, *truth.augmented_among_originals, *truth.held_out)
    textured = {path_of(s, truth) for s in sources} | {
        path_of(c.stem, truth) for c in copies if c.source in sources
    }
    with zipfile.ZipFile(dest) as ours, zipfile.ZipFile(without) as theirs:
        names = set(theirs.namelist())
        assert set(ours.namelist()) - names == added
        for name in sorted(names):
            changed = name in labelled | textured
            assert (ours.read(name) == theirs.read(name)) != changed, name


@pytest.fixture(scope="module")
def planted_folder(sample_zip, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample's planted films (revisits, their sources, the labelled films) in a folder."""
    dest, truth = sample_zip
    folder = tmp_path_factory.mktemp("planted")
    stems = [s for pair in truth.realistic_visits for s in pair] + list(truth.shared_label_films)
    with zipfile.ZipFile(dest) as archive:
        for stem in stems:
            (folder / f"{stem}.jpg").write_bytes(archive.read(f"{ORIGINAL_DIR}/{stem}.jpg"))
    return folder


def test_the_visits_step_finds_every_realistic_revisit_and_never_the_shared_label(
    sample_zip, planted_folder
):
    truth = sample_zip[1]
    assert len(truth.shared_label_films) == LABELLED_FILMS
    assert not any(set(truth.shared_label_films) <= set(g) for g in truth.patient_groups)
    found = find_visits(planted_folder, workers=1).to_pylist()
    pairs = {frozenset((v["film_id"], v["other_film_id"])) for v in found}
    assert pairs == {frozenset(pair) for pair in truth.realistic_visits}, found
    assert frozenset(truth.shared_label_films) not in pairs


def test_planted_revisits_verify_like_real_revisits_and_other_planted_pairs_link_nothing(
    sample_zip, planted_folder
):
    """A real revisit covers 47 or more cells (docs/margins.md, "Visits"): the
    drawn ones, whose patients carry their bone's texture, at least twice the limit; every
    other pair of planted films (different patients, the shared label) at most half of it."""
    truth = sample_zip[1]
    features = {p.stem: visit_features_of(p.read_bytes()) for p in sorted(planted_folder.iterdir())}
    revisits = {frozenset(pair) for pair in truth.realistic_visits}
    for a, b in combinations(sorted(features), 2):
        cells = verify(features[a], features[b]).cells
        if frozenset((a, b)) in revisits:
            assert cells >= 2 * MIN_CELLS, (a, b, cells)
        else:
            assert cells <= MIN_CELLS // 2, (a, b, cells)
