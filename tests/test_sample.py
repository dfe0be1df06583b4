"""The sample archive must look like the real one and carry every planted case its truth names."""

from __future__ import annotations

import io
import itertools
import re
import zipfile
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import pytest
from PIL import Image, UnidentifiedImageError

from curation.hashing import AverageHash512, View, hamming
from curation.sample import (
    ANNOTS_DIR,
    AUGMENT_DIGITS,
    AUGMENTED_DIR,
    ORIGINAL_DIR,
    SampleTruth,
    truth_path,
    write_sample_archive,
)

SMALL = 30


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> tuple[Path, SampleTruth]:
    dest = tmp_path_factory.mktemp("small") / "sample.zip"
    return dest, write_sample_archive(dest, seed=3, films=SMALL)


@pytest.fixture(scope="module")
def default(tmp_path_factory) -> tuple[Path, SampleTruth, dict[str, dict[View, bytes]]]:
    """The default archive, extracted once, with every image's hash views."""
    folder = tmp_path_factory.mktemp("default")
    dest = folder / "sample.zip"
    truth = write_sample_archive(dest)
    with zipfile.ZipFile(dest) as archive:
        archive.extractall(folder / "x")
    hasher = AverageHash512()
    views = {}
    for directory in (ORIGINAL_DIR, AUGMENTED_DIR):
        for path in sorted((folder / "x" / directory).glob("*.jpg")):
            try:
                views[path.stem] = hasher.hash_views(str(path))
            except (OSError, Image.DecompressionBombError):
                continue
    return folder, truth, views


def _xml(archive: zipfile.ZipFile, stem: str) -> ElementTree.Element:
    return ElementTree.fromstring(archive.read(f"{ANNOTS_DIR}/{stem}.xml"))


def test_same_seed_gives_byte_identical_archive_and_truth(tmp_path, small):
    dest, _ = small
    again = tmp_path / "sample.zip"
    write_sample_archive(again, seed=3, films=SMALL)
    assert again.read_bytes() == dest.read_bytes()
    assert truth_path(again).read_text() == truth_path(dest).read_text()
    other = tmp_path / "other.zip"
    write_sample_archive(other, seed=4, films=SMALL)
    assert other.read_bytes() != dest.read_bytes()


def test_truth_round_trips_and_never_carries_patient_numbers(small):
    dest, truth = small
    text = truth_path(dest).read_text()
    assert SampleTruth.from_json(text) == truth
    assert "PN" not in text
    with zipfile.ZipFile(dest) as archive:
        malformed = {bad.stem for bad in truth.bad_inputs if bad.reason == "malformed XML"}
        filenames = [
            _xml(archive, s).findtext("filename")
            for s in truth.patient_number_in_filename
            if s not in malformed
        ]
        assert all(Path(dest.name).stem + ".truth.json" not in n for n in archive.namelist())
    numbers = {re.search(r"PN(\d+)", name).group(1) for name in filenames}
    assert numbers and not any(number in text for number in numbers)


def test_layout_stems_and_junk(small):
    dest, truth = small
    with zipfile.ZipFile(dest) as archive:
        names = archive.namelist()
        infos = archive.infolist()
    assert names == sorted(names)
    assert {i.date_time for i in infos} == {(2024, 1, 1, 0, 0, 0)}
    assert all(n.startswith("Periapical Dataset/") for n in names)
    assert set(truth.junk_archives) <= set(names)
    for stem in truth.originals:
        assert re.fullmatch(r"\d{5,6}", stem) and stem.endswith("1")
        assert f"{ORIGINAL_DIR}/{stem}.jpg" in names and f"{ANNOTS_DIR}/{stem}.xml" in names
    assert any(len(s) == 6 and s.startswith("0") for s in truth.originals)
    kinds = [copy.kind for copy in truth.augmented]
    assert all(kinds.count(kind) >= 3 for kind in AUGMENT_DIGITS)
    for copy in truth.augmented:
        assert copy.stem[:-1] == copy.source[:-1]
        assert copy.stem[-1] == AUGMENT_DIGITS[copy.kind]
        assert f"{AUGMENTED_DIR}/{copy.stem}.jpg" in names
        assert f"{ANNOTS_DIR}/{copy.stem}.xml" in names
    assert sorted(c.kind for c in truth.augmented_among_originals) == sorted(AUGMENT_DIGITS)
    for copy in truth.augmented_among_originals:
        assert copy.stem.endswith("1") and f"{ORIGINAL_DIR}/{copy.stem}.jpg" in names


def test_films_have_real_sizes_modes_and_boxes(small):
    dest, truth = small
    modes = set()
    with zipfile.ZipFile(dest) as archive:
        for stem in truth.originals:
            data = archive.read(f"{ORIGINAL_DIR}/{stem}.jpg")
            assert 50_000 < len(data) < 400_000
            with Image.open(io.BytesIO(data)) as image:
                assert image.format == "JPEG"
                assert 2300 <= image.width <= 2640 and 1250 <= image.height <= 1300
                modes.add(image.mode)
                film = truth.film_truth[stem]
                assert (film.width, film.height, film.mode) == (*image.size, image.mode)
            xml_boxes = []
            for obj in _xml(archive, stem).iter("object"):
                corners = [
                    int(obj.findtext(f"bndbox/{t}")) for t in ("xmin", "ymin", "xmax", "ymax")
                ]
                x1, x2 = sorted(corners[0::2])
                y1, y2 = sorted(corners[1::2])
                xml_boxes.append((x1, y1, x2, y2, int(obj.findtext("name"))))
            assert tuple(sorted(xml_boxes)) == film.lesions
    assert modes == {"L", "RGB"}
    grades = {box[4] for film in truth.film_truth.values() for box in film.lesions}
    assert grades == {3, 4, 5}
    assert any(not film.lesions for film in truth.film_truth.values())


def test_xml_quirks(small):
    dest, truth = small
    with zipfile.ZipFile(dest) as archive:
        assert len(truth.reversed_boxes) >= 2
        for stem in truth.reversed_boxes:
            box = _xml(archive, stem).find("object/bndbox")
            assert int(box.findtext("xmin")) > int(box.findtext("xmax"))
        for copy in truth.augmented:
            size = _xml(archive, copy.stem).find("size")
            stated = int(size.findtext("width")), int(size.findtext("height"))
            with Image.open(io.BytesIO(archive.read(f"{AUGMENTED_DIR}/{copy.stem}.jpg"))) as im:
                source = truth.film_truth[copy.source]
                if copy.kind == "rotation":
                    assert stated == (source.width, source.height)
                    if copy.detail == "angle=-90":
                        assert im.size == (source.height, source.width)
                else:
                    assert stated == im.size


def test_planted_bad_inputs_fail_as_described(small):
    dest, truth = small
    reasons = {bad.reason for bad in truth.bad_inputs}
    assert len(reasons) >= 14
    with zipfile.ZipFile(dest) as archive:
        names = set(archive.namelist())
        by_reason = {bad.reason: bad for bad in truth.bad_inputs}

        def open_image(reason: str) -> Image.Image:
            return Image.open(io.BytesIO(archive.read(by_reason[reason].path)))

        orphan = by_reason["annotation without image"].stem
        assert not any(Path(n).stem == orphan for n in names if n.lower().endswith(".jpg"))
        assert f"{ANNOTS_DIR}/{by_reason['image without annotation'].stem}.xml" not in names
        with pytest.raises(OSError), open_image("truncated JPEG") as image:
            image.load()
        with pytest.raises(UnidentifiedImageError):
            open_image("not an image")
        bomb = by_reason["decompression bomb (header claims 240 MP)"]
        assert len(archive.read(bomb.path)) < 2_000
        with pytest.raises(Image.DecompressionBombError):
            open_image(bomb.reason)
        assert open_image("CMYK JPEG").mode == "CMYK"
        sixteen = open_image("16-bit grayscale (png data, mode I;16, under a .jpg name)")
        assert (sixteen.format, sixteen.mode) == ("PNG", "I;16")
        with pytest.raises(ElementTree.ParseError):
            _xml(archive, by_reason["malformed XML"].stem)
        names_of = {
            r: _xml(archive, by_reason[r].stem).findtext("object/name")
            for r in reasons
            if "grade" in r
        }
        assert sorted(names_of.values()) == ["7", "lesion"]
        nan = _xml(archive, by_reason["NaN coordinate"].stem).find("object/bndbox")
        assert nan.findtext("xmin") == "NaN"
        negative = _xml(archive, by_reason["negative coordinate"].stem).find("object/bndbox")
        assert int(negative.findtext("ymin")) < 0
        flat = _xml(archive, by_reason["degenerate (zero-area) box"].stem).find("object/bndbox")
        assert flat.findtext("xmin") == flat.findtext("xmax")
        for reason in (r for r in reasons if r.startswith("duplicate stem")):
            paths = [b.path for b in truth.bad_inputs if b.reason == reason]
            assert len(paths) == 2 and len({Path(p).stem for p in paths}) == 1
            assert set(paths) <= names


def test_double_annotated_pairs_share_pixels_but_not_boxes(small):
    dest, truth = small
    with zipfile.ZipFile(dest) as archive:
        for pair in truth.double_annotated:
            first = archive.read(f"{ORIGINAL_DIR}/{pair.first}.jpg")
            second = archive.read(f"{ORIGINAL_DIR}/{pair.second}.jpg")
            assert (first == second) == (pair.encoding == "identical")
            a = np.asarray(Image.open(io.BytesIO(first)).convert("L"), dtype=np.float32)
            b = np.asarray(Image.open(io.BytesIO(second)).convert("L"), dtype=np.float32)
            assert np.abs(a - b).mean() < 2.0
    boxed = [p for p in truth.double_annotated if truth.film_truth[p.first].lesions]
    assert any(
        truth.film_truth[p.first].lesions != truth.film_truth[p.second].lesions for p in boxed
    )


def _related(truth: SampleTruth) -> list[set[str]]:
    """Families of stems that may legitimately hash close together."""
    families = [set(group) for group in truth.lookalike_groups]
    families += [{pair.first, pair.second} for pair in truth.double_annotated]
    for copy in (*truth.augmented, *truth.augmented_among_originals):
        families.append({copy.stem, copy.source})
    return families


def test_lookalikes_are_close_but_not_pixel_identical(default):
    folder, truth, views = default
    assert len(truth.originals) == 200 and len(truth.lookalike_groups) >= 4
    for group in truth.lookalike_groups:
        for a, b in itertools.combinations(group, 2):
            assert hamming(views[a][View.identity], views[b][View.identity]) <= 30
            grey = [
                np.asarray(
                    Image.open(folder / "x" / ORIGINAL_DIR / f"{s}.jpg")
                    .convert("L")
                    .resize((256, 128)),
                    dtype=np.float32,
                )
                for s in (a, b)
            ]
            assert np.abs(grey[0] - grey[1]).mean() > 4.0
    for pair in truth.double_annotated:
        assert hamming(views[pair.first][View.identity], views[pair.second][View.identity]) <= 30


def test_unrelated_films_are_rarely_within_radius(default):
    _, truth, views = default
    families = _related(truth)
    stems = [s for s in truth.originals if s in views]
    close = total = 0
    for a, b in itertools.combinations(stems, 2):
        if any(a in f and b in f for f in families):
            continue
        total += 1
        close += hamming(views[a][View.identity], views[b][View.identity]) <= 30
    assert total > 15_000 and close / total < 0.01


def test_augmented_copies_are_far_unless_turned_back(default):
    _, truth, views = default
    undo = {"mirror": View.mirror, "angle=-90": View.rot90, "angle=-180": View.rot180}
    for copy in (*truth.augmented, *truth.augmented_among_originals):
        source = views[copy.source][View.identity]
        own = views[copy.stem]
        if copy.kind in ("noise", "scaling"):
            assert hamming(own[View.identity], source) <= 30, copy
            continue
        assert hamming(own[View.identity], source) > 30, copy
        view = undo["mirror" if copy.kind == "mirror" else copy.detail]
        assert hamming(own[view], source) <= 30, copy
