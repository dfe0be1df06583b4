"""Every case the sample plants, checked against the chain's decisions (issue 11).

The sample is drawn without the project's hash (``curation/sample``): copies of all four kinds
filed among the originals under lower and higher numbers, re-filings at other exposures and
qualities, copies written by another encoder, patient numbers and a copied template.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from PIL import Image

from curation.keeper.frame import border_shares
from curation.lookalikes.components import MAX_FILMS_PER_PATIENT
from curation.sample.plants.copies import OWN_BORDER

# Same picture under another frame, as the sample plants it, and the kind the chain names.
REFRAMED = {"crop": "cropped", "pad": "padded", "tilt": "rotated", "clahe": "re-toned"}


def _images(build: Path) -> dict[str, dict]:
    rows = pq.read_table(build / "manifest.parquet").to_pylist()
    return {r["film_id"]: r for r in rows if r["kind"] == "image"}


@pytest.fixture(scope="module")
def decided(sample_zip, sample_build):
    images = _images(sample_build)
    kept = {f for f, r in images.items() if r["fate"] == "kept"}
    clusters = {
        r["film_id"]: r["cluster_id"]
        for r in pq.read_table(sample_build / "clusters.parquet").to_pylist()
    }
    agreement = {
        frozenset((r["film_id"], r["other_film_id"]))
        for r in pq.read_table(sample_build / "agreement.parquet").to_pylist()
    }
    return sample_zip[1], images, kept, clusters, agreement


def test_the_sample_plants_every_case_under_lower_and_higher_numbers(decided):
    truth = decided[0]
    among = truth.augmented_among_originals
    assert {c.kind for c in among} == {"noise", "scaling", "mirror", "rotation", *REFRAMED}
    for kind in ("mirror", "rotation", *REFRAMED):
        assert {c.number_lower for c in among if c.kind == kind} == {True, False}, kind
    assert any(d.offset or d.gain != 1 or d.gamma != 1 for d in truth.double_annotated)


def test_no_augmented_copy_is_kept_and_the_original_is_kept_in_every_group(decided):
    truth, images, kept, _, _ = decided
    copies = truth.augmented + truth.augmented_among_originals
    assert not kept & {c.stem for c in copies}
    twin_of = {}
    for pair in truth.double_annotated:
        twin_of[pair.first], twin_of[pair.second] = pair.second, pair.first
    for copy in truth.augmented_among_originals:
        assert {copy.source, twin_of.get(copy.source)} & kept, (copy, images[copy.stem])
        assert images[copy.stem]["reason"].startswith("augmented copy among originals"), copy


def test_every_copy_under_another_frame_is_dropped_into_its_originals_group(decided):
    """Cropped, padded, tilted and CLAHE re-toned copies: the whole-frame check misses them,
    the frame check (``curation.same_picture.frame_check``) drops them, named by what was done."""
    truth, images, kept, _, _ = decided
    reframed = [c for c in truth.augmented_among_originals if c.kind in REFRAMED]
    assert len(reframed) == 2 * len(REFRAMED)
    for copy in reframed:
        row = images[copy.stem]
        assert row["fate"] == "dropped" and copy.source in kept, (copy, row)
        assert row["related"] == copy.source, (copy, row)
        assert row["reason"].startswith(f"augmented copy among originals: {REFRAMED[copy.kind]}")
        assert "aligned onto" in row["reason"], row


def test_every_re_filing_is_dropped_once_and_feeds_the_agreement_table(decided):
    truth, images, kept, _, agreement = decided
    for pair in truth.double_annotated:
        assert len({pair.first, pair.second} & kept) == 1, pair
        assert frozenset((pair.first, pair.second)) in agreement, (
            pair,
            images[pair.first]["reason"],
            images[pair.second]["reason"],
        )


def test_no_copy_is_read_as_a_re_filing(decided):
    truth, _, _, _, agreement = decided
    copies = {c.stem for c in truth.augmented + truth.augmented_among_originals}
    assert not [pair for pair in agreement if pair & copies]


def test_no_distinct_film_is_dropped(decided):
    truth, images, _, _, _ = decided
    copies = {c.stem for c in truth.augmented + truth.augmented_among_originals + truth.held_out}
    refiled = {f for pair in truth.double_annotated for f in (pair.first, pair.second)}
    dropped = {f for f, r in images.items() if r["fate"] == "dropped"}
    assert dropped <= copies | refiled


def test_films_naming_one_patient_share_a_cluster_and_the_template_joins_nobody(
    decided, sample_build
):
    truth, _, kept, clusters, _ = decided
    numbered = set(truth.patient_number_in_filename) - set(truth.template_number_films)
    joined = 0
    for group in truth.patient_groups:
        named = [f for f in group if f in numbered and f in kept]
        if len(named) > 1:
            assert len({clusters[f] for f in named}) == 1, group
            joined += 1
    assert joined, "the sample names no patient twice"
    template = [f for f in truth.template_number_films if f in kept]
    assert len(template) > MAX_FILMS_PER_PATIENT
    assert len({clusters[f] for f in template}) > len(template) // 2
    counts = json.loads((sample_build / "curation.json").read_text())["counts"]
    assert counts["films_with_template_patient_number"] == len(truth.template_number_films)


def test_the_review_page_shows_every_same_picture_group(decided, sample_build):
    _, images, _, _, _ = decided
    page = (sample_build / "review" / "index.html").read_text()
    for film, row in images.items():
        if row["fate"] == "dropped" and row["reason"].startswith(("augmented copy among", "near")):
            assert film in page and row["related"] in page


# Held-out cases (``curation.sample.plants.copies.plan_held_out_cases``) and how the chain
# names them.
HELD_OUT = {
    "negative": "augmented copy among originals: negative of",
    "scaling": "augmented copy among originals: rescaled of",
    "drawn lesion": "near-identical: the same radiograph as",
    "mirror": "augmented copy among originals: mirror of",
    "re-encoded": "augmented copy among originals: noised of",  # of a bordered original
}


def test_each_held_out_case_is_dropped_into_its_films_group_naming_a_film_of_the_source(
    decided,
):
    """A negative, a 256-pixel downscale, a re-filing with one more lesion drawn, a
    mirrored copy found only in the augmentation folder and a re-encoded copy of a film with
    a border of its own: each dropped with ``related`` naming
    its film, which is kept."""
    truth, images, kept, _, _ = decided
    assert {c.kind for c in truth.held_out} == set(HELD_OUT)
    for copy in truth.held_out:
        row = images[copy.stem]
        assert row["fate"] == "dropped" and row["related"] == copy.source, (copy, row)
        assert copy.source in kept and row["reason"].startswith(HELD_OUT[copy.kind]), row


def test_an_original_with_a_border_of_its_own_is_kept_over_its_re_encoded_copy(decided, sample_zip):
    """The planted film with a constant dark border of its own (as held-out archives' films
    carry) is kept; its copy, re-encoded at a lower quality and numbered lower, is dropped."""
    truth, images, kept, _, _ = decided
    copy = next(c for c in truth.held_out if c.kind == "re-encoded")
    with zipfile.ZipFile(sample_zip[0]) as archive:
        [name] = [n for n in archive.namelist() if n.endswith(f"Images/{copy.source}.jpg")]
        grey = np.asarray(Image.open(io.BytesIO(archive.read(name))).convert("L"))
    assert min(border_shares(grey)) >= OWN_BORDER / 2  # a border of its own, every side
    assert copy.number_lower and copy.source in kept
    assert images[copy.stem]["fate"] == "dropped" and images[copy.stem]["related"] == copy.source


def test_a_re_filing_with_one_more_lesion_drawn_keeps_both_annotations(decided, sample_build):
    truth, _, _, _, _ = decided
    drawn = next(c for c in truth.held_out if c.kind == "drawn lesion")
    rows = pq.read_table(sample_build / "agreement.parquet").to_pylist()
    [row] = [r for r in rows if {r["film_id"], r["other_film_id"]} == {drawn.stem, drawn.source}]
    of = {row["film_id"]: row["lesions"], row["other_film_id"]: row["other_lesions"]}
    assert len(of[drawn.stem]) == len(of[drawn.source]) + 1
