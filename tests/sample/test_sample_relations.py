"""The sample's planted relations, as its truth names them: copies show their source and carry
its boxes, re-filings are one radiograph at recorded exposures, encoder signatures tell the
script's copies apart, patient numbers, visits, and distinct films as far apart as the real
archive's."""

from __future__ import annotations

import io
import itertools
import re
import zipfile
from collections import defaultdict
from pathlib import Path

import cv2
import numpy as np
from PIL import Image, JpegImagePlugin

from curation.sample import AUGMENTED_DIR, ORIGINAL_DIR, SampleTruth, write_sample_archive
from tests.sample_reading import annotation_of, boxes_of, film_grey, path_of

ANGLES = {"rot-90": -90, "rot+90": 90, "rot180": 180}


def _mask(size: tuple[int, int], boxes) -> np.ndarray:
    width, height = size
    mask = np.zeros((height, width), dtype=np.int8)
    for index, (x1, y1, x2, y2, _) in enumerate(boxes, start=1):
        mask[y1 : y2 + 1, x1 : x2 + 1] = index
    return mask


def _moved(mask: np.ndarray, transform: str, param: float) -> np.ndarray:
    """The box mask carried through the copy's transform, independently of the generator."""
    if transform == "mirror":
        return mask[:, ::-1]
    if transform in ANGLES:
        return np.rot90(mask, k=ANGLES[transform] // 90)
    if transform == "scaling":
        height, width = mask.shape
        size = (round(width * param), round(height * param))
        return np.asarray(Image.fromarray(mask.astype(np.uint8)).resize(size, Image.NEAREST))
    height, width = mask.shape
    dy, dx = round(height * param), round(width * param)
    if transform == "crop":
        return mask[dy : height - dy, dx : width - dx]
    if transform == "pad":
        return np.pad(mask, ((dy, dy), (dx, dx)))
    if transform == "tilt":  # turned counter-clockwise about the centre, as OpenCV turns
        turned = Image.fromarray(mask.astype(np.uint8)).rotate(
            param, Image.NEAREST, center=(width / 2, height / 2)
        )
        return np.asarray(turned)
    return mask


def _same_region(own: np.ndarray, base: np.ndarray, copy) -> tuple[np.ndarray, np.ndarray]:
    """The copy and its source over the part of the picture both show, frame undone."""
    height, width = base.shape
    dy, dx = round(height * copy.param), round(width * copy.param)
    if copy.transform == "crop":
        return own, base[dy : height - dy, dx : width - dx]
    if copy.transform == "pad":
        return own[dy : own.shape[0] - dy, dx : own.shape[1] - dx], base
    back = Image.fromarray(own).rotate(-copy.param, Image.BILINEAR, center=(width / 2, height / 2))
    inner = (slice(height // 10, -height // 10), slice(width // 10, -width // 10))
    return np.asarray(back)[inner], base[inner]


def _undone(copy_grey: np.ndarray, transform: str, size: tuple[int, int]) -> np.ndarray:
    if transform == "mirror":
        copy_grey = copy_grey[:, ::-1]
    elif transform in ANGLES:
        copy_grey = np.rot90(copy_grey, k=-ANGLES[transform] // 90)
    return np.asarray(Image.fromarray(copy_grey).resize(size, Image.BILINEAR))


def test_copies_show_their_source_and_carry_its_boxes_moved_with_them(small_sample):
    """Each copy, turned back, shows its source's pixels; its XML boxes are the source's boxes
    carried through the same transform (checked on a mask, not with the generator's code)."""
    dest, truth = small_sample
    with zipfile.ZipFile(dest) as archive:
        for copy in (*truth.augmented, *truth.augmented_among_originals):
            source = truth.film_truth[copy.source]
            size = (source.width, source.height)
            own = film_grey(archive, path_of(copy.stem, truth))
            base = film_grey(archive, f"{ORIGINAL_DIR}/{copy.source}.jpg")
            if copy.transform == "clahe":  # re-toned locally: the source under OpenCV's CLAHE
                clahe = cv2.createCLAHE(clipLimit=copy.param, tileGridSize=(8, 8))
                base = clahe.apply(base.astype(np.uint8)).astype(np.float32)
            if copy.transform in ("crop", "pad", "tilt"):
                region = _same_region(own, base, copy)
                assert np.abs(region[0].astype(float) - region[1]).mean() < 3.0, copy
            else:
                small_size = (size[0] // 8, size[1] // 8)
                back = _undone(own, copy.transform, size)
                shrink = [
                    np.asarray(Image.fromarray(a).resize(small_size, Image.BOX))
                    for a in (back, base)
                ]
                assert np.abs(shrink[0] - shrink[1]).mean() < 3.0, copy
            moved = _moved(_mask(size, source.lesions), copy.transform, copy.param)
            expected = []
            for index, (*_, pai) in enumerate(source.lesions, start=1):
                ys, xs = np.nonzero(moved == index)
                expected.append((xs.min(), ys.min(), xs.max(), ys.max(), pai))
            stated = boxes_of(archive, copy.stem)
            assert len(stated) == len(expected), copy
            for got, want in zip(stated, sorted(expected), strict=True):
                assert (
                    got[4] == want[4]
                    and max(abs(g - w) for g, w in zip(got, want, strict=True)) <= 1
                )


def test_refilings_are_one_radiograph_at_recorded_exposures(small_sample):
    """Re-filings: byte-identical, re-encoded, or re-exposed exactly as the truth records."""
    dest, truth = small_sample
    assert {p.encoding for p in truth.double_annotated} == {"identical", "reencoded", "reexposed"}
    with zipfile.ZipFile(dest) as archive:
        for pair in truth.double_annotated:
            first = archive.read(f"{ORIGINAL_DIR}/{pair.first}.jpg")
            second = archive.read(f"{ORIGINAL_DIR}/{pair.second}.jpg")
            assert (first == second) == (pair.encoding == "identical")
            assert (pair.first_quality == pair.second_quality) == (pair.encoding == "identical")
            assert abs(pair.offset) <= 8 and 0.9 <= pair.gain <= 1.1
            assert 0.85 <= pair.gamma <= 1.15
            if pair.encoding != "reexposed":
                assert (pair.offset, pair.gain, pair.gamma) == (0.0, 1.0, 1.0)
            a = film_grey(archive, f"{ORIGINAL_DIR}/{pair.first}.jpg")
            b = film_grey(archive, f"{ORIGINAL_DIR}/{pair.second}.jpg")
            exposed = 255 * np.clip((a * pair.gain + pair.offset) / 255, 0, 1) ** pair.gamma
            assert np.abs(exposed - b).mean() < 2.0, pair
    boxed = [p for p in truth.double_annotated if truth.film_truth[p.first].lesions]
    assert any(
        truth.film_truth[p.first].lesions != truth.film_truth[p.second].lesions for p in boxed
    )


def _signature(data: bytes) -> dict:
    with Image.open(io.BytesIO(data)) as image:
        exif = image.getexif()
        return {
            "jfif": "jfif" in image.info,
            "exif": bool(exif),
            "make": exif.get(0x010F),
            "comment": image.info.get("comment"),
            "mode": image.mode,
            "sampling": JpegImagePlugin.get_sampling(image),
            "tables": image.quantization,
        }


def test_originals_and_augmented_copies_carry_different_encoder_signatures(small_sample):
    dest, truth = small_sample
    reference = io.BytesIO()
    Image.new("RGB", (64, 64), (90, 90, 90)).save(reference, "JPEG")
    pillow_tables = _signature(reference.getvalue())["tables"]
    with zipfile.ZipFile(dest) as archive:
        for stem in truth.originals:
            seen = _signature(archive.read(f"{ORIGINAL_DIR}/{stem}.jpg"))
            assert not seen["jfif"] and seen["exif"] and seen["make"] and seen["comment"]
            assert (seen["mode"], seen["sampling"]) in {("L", -1), ("RGB", 0)}, stem
            assert seen["tables"][0] != pillow_tables[0]
            assert truth.film_truth[stem].encoder == "imaging-system"
        for copy in (*truth.augmented, *truth.augmented_among_originals):
            seen = _signature(archive.read(path_of(copy.stem, truth)))
            assert seen["jfif"] and not seen["exif"] and seen["comment"] is None, copy
            assert (seen["mode"], seen["sampling"]) == ("RGB", 2)
            assert seen["tables"] == pillow_tables
            assert copy.encoder == "pillow-script"
    assert set(truth.encoders) == {"imaging-system", "pillow-script"}


def test_patient_numbers_mark_real_patients_and_one_copied_template(default_sample):
    dest, truth = default_sample
    members = defaultdict(set)
    with zipfile.ZipFile(dest) as archive:
        for stem in truth.patient_number_in_filename:
            name = annotation_of(archive, stem).findtext("filename")
            members[re.fullmatch(r"PN(\d{6})_pano\.jpg", name).group(1)].add(stem)
        unnumbered = [
            s
            for s in truth.originals
            if not annotation_of(archive, s).findtext("filename").startswith("PN")
        ]
    sets = [frozenset(group) for group in members.values()]
    patients = {frozenset(group) for group in truth.patient_groups}
    pairs = [(p.first, p.second) for p in truth.double_annotated]
    visits = [*truth.lookalike_groups, *truth.distant_visit_groups, *pairs]
    visits += truth.realistic_visits
    expected_patients = {frozenset(group) for group in visits}
    assert patients == expected_patients
    assert frozenset(truth.template_number_films) in sets and len(truth.template_number_films) == 25
    assert all(group in sets for group in map(frozenset, truth.distant_visit_groups))
    numbered_patients = [s for s in sets if s in patients]
    assert len(numbered_patients) >= 5 and any(len(s) >= 3 for s in numbered_patients)
    for group in sets:
        if group != frozenset(truth.template_number_films):
            assert group in patients or len(group) == 1
    assert any(len(s) == 1 for s in sets) and unnumbered
    for group in patients:
        assert group in sets or not group & set(truth.patient_number_in_filename)


def test_visits_differ_from_each_other(default_sample):
    """Look-alike and distant visits are separate exposures, never pixel copies."""
    dest, truth = default_sample
    assert len(truth.lookalike_groups) >= 4 and len(truth.distant_visit_groups) >= 4
    with zipfile.ZipFile(dest) as archive:
        for group in (*truth.lookalike_groups, *truth.distant_visit_groups):
            grey = {
                s: np.asarray(
                    Image.fromarray(film_grey(archive, f"{ORIGINAL_DIR}/{s}.jpg")).resize(
                        (256, 128)
                    )
                )
                for s in group
            }
            for a, b in itertools.combinations(group, 2):
                assert np.abs(grey[a] - grey[b]).mean() > 4.0


def test_option_files_every_copy_among_the_originals_too(tmp_path):
    dest = tmp_path / "allcopies.zip"
    truth = write_sample_archive(dest, seed=5, films=60, all_copies_among_originals=True)
    assert truth.all_copies_among_originals
    refiled = {c.filed_copy_of: c for c in truth.augmented_among_originals if c.filed_copy_of}
    assert set(refiled) == {copy.stem for copy in truth.augmented}
    stems = [*truth.originals, *(c.stem for c in truth.augmented_among_originals)]
    assert len({int(s[:-1]) for s in stems}) == len(stems)
    with zipfile.ZipFile(dest) as archive:
        for copy in truth.augmented:
            twin = refiled[copy.stem]
            assert twin.stem.endswith("1") and twin.source == copy.source
            assert (twin.kind, twin.transform, twin.param) == (
                copy.kind,
                copy.transform,
                copy.param,
            )
            assert twin.number_lower == (int(twin.stem[:-1]) < int(copy.source[:-1]))
            assert archive.read(f"{ORIGINAL_DIR}/{twin.stem}.jpg") == archive.read(
                f"{AUGMENTED_DIR}/{copy.stem}.jpg"
            )
            assert boxes_of(archive, twin.stem) == boxes_of(archive, copy.stem)
    assert {c.number_lower for c in refiled.values()} == {True, False}


def _distinct_film_distances(dest: Path, truth: SampleTruth) -> np.ndarray:
    """Hamming distances (the project's 512-bit hash, as is) between films of different
    patients: measured after the fact, the generator never sees them."""
    from curation.hashes.hashing import AverageHash512, View, hamming

    hasher = AverageHash512()
    with zipfile.ZipFile(dest) as archive:
        hashes = {
            s: hasher.hash_views(io.BytesIO(archive.read(f"{ORIGINAL_DIR}/{s}.jpg")))[View.identity]
            for s in truth.originals
        }
    together = [set(group) for group in truth.patient_groups]
    return np.array(
        [
            hamming(hashes[a], hashes[b])
            for a, b in itertools.combinations(truth.originals, 2)
            if not any(a in group and b in group for group in together)
        ]
    )


def test_distinct_films_spread_like_the_real_archive(default_sample):
    """Real films: distinct films min 61, 1st percentile 93, median 175 bits apart. The sample
    must show a comparable spread (not one pushed away from the hash's radius), and some
    visits of one patient must be as far apart as unrelated films."""
    from curation.hashes.hashing import AverageHash512, View, hamming

    dest, truth = default_sample
    distances = _distinct_film_distances(dest, truth)
    assert distances.size > 15_000
    assert 75 <= np.percentile(distances, 1) <= 115
    assert 150 <= np.median(distances) <= 200
    hasher = AverageHash512()
    with zipfile.ZipFile(dest) as archive:
        visits = [
            hamming(
                *(
                    hasher.hash_views(io.BytesIO(archive.read(f"{ORIGINAL_DIR}/{s}.jpg")))[
                        View.identity
                    ]
                    for s in pair
                )
            )
            for group in truth.distant_visit_groups
            for pair in itertools.combinations(group, 2)
        ]
    assert max(visits) > np.percentile(distances, 1)
