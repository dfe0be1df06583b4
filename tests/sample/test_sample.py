"""The sample archive must look like the real one (layout, names, sizes, annotation quirks, bad
files) and be drawn without ever consulting the project's hash or detection code. How its
planted films relate to each other: ``tests/sample/test_sample_relations.py``."""

from __future__ import annotations

import ast
import io
import re
import subprocess
import sys
import zipfile
from collections import defaultdict
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import pytest
from PIL import Image, UnidentifiedImageError

from curation.sample import (
    ANNOTS_DIR,
    AUGMENT_DIGITS,
    AUGMENTED_DIR,
    ORIGINAL_DIR,
    SampleTruth,
    truth_path,
    write_sample_archive,
)
from tests.sample_reading import (
    SMALL_FILMS,
    SMALL_SEED,
    annotation_of,
    boxes_of,
    path_of,
)

SAMPLE_PACKAGE = Path(__file__).parents[2] / "curation" / "sample"
DRAWING_PACKAGE = Path(__file__).parents[2] / "curation" / "drawing"
AMONG_TRANSFORMS = {
    "noise-faint",
    "noise-strong",
    "scaling",
    "mirror",
    "rot-90",
    "rot+90",
    "rot180",
    "crop",
    "pad",
    "tilt",
    "clahe",
}


def test_same_seed_gives_byte_identical_archive_and_truth(tmp_path, small_sample):
    dest, _ = small_sample
    again = tmp_path / "sample.zip"
    write_sample_archive(again, seed=SMALL_SEED, films=SMALL_FILMS)
    assert again.read_bytes() == dest.read_bytes()
    assert truth_path(again).read_text() == truth_path(dest).read_text()
    other = tmp_path / "other.zip"
    write_sample_archive(other, seed=SMALL_SEED + 1, films=SMALL_FILMS)
    assert other.read_bytes() != dest.read_bytes()


def test_truth_round_trips_and_never_carries_patient_numbers(small_sample):
    dest, truth = small_sample
    text = truth_path(dest).read_text()
    assert SampleTruth.from_json(text) == truth
    assert "PN" not in text
    with zipfile.ZipFile(dest) as archive:
        malformed = {bad.stem for bad in truth.bad_inputs if bad.reason == "malformed XML"}
        filenames = [
            annotation_of(archive, s).findtext("filename")
            for s in truth.patient_number_in_filename
            if s not in malformed
        ]
        assert all(Path(dest.name).stem + ".truth.json" not in n for n in archive.namelist())
    numbers = {re.search(r"PN(\d+)", name).group(1) for name in filenames}
    assert numbers and not any(number in text for number in numbers)


# The toolkit's plumbing the generator may share: errors and the ordered process map.
# errors, worker processes, and the zip comment a sample carries (stdlib only)
SHARED_PLUMBING = {"curation.core.errors", "curation.core.parallel", "curation.core.build_origin"}


def test_the_generator_imports_no_detection_code():
    """The sample package and the drawing it files may import only themselves and the
    toolkit's plumbing from curation."""
    modules = [*SAMPLE_PACKAGE.rglob("*.py"), *DRAWING_PACKAGE.rglob("*.py")]
    for module in modules:
        for node in ast.walk(ast.parse(module.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                if name.split(".")[0] == "curation":
                    ours = name.startswith(("curation.sample", "curation.drawing"))
                    assert ours or name in SHARED_PLUMBING, (
                        module.name,
                        name,
                    )
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, curation.sample; print(' '.join(sorted(sys.modules)))",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    outside = [
        m
        for m in loaded
        if m.startswith("curation.")
        and not m.startswith(("curation.sample", "curation.drawing"))
        and m not in SHARED_PLUMBING | {name.rpartition(".")[0] for name in SHARED_PLUMBING}
    ]
    assert outside == []


def test_layout_stems_and_junk(small_sample):
    dest, truth = small_sample
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
    numbers = [int(s[:-1]) for s in truth.originals]
    assert len(set(numbers)) == len(numbers)
    kinds = [copy.kind for copy in truth.augmented]
    assert all(kinds.count(kind) >= 3 for kind in AUGMENT_DIGITS)
    for copy in truth.augmented:
        assert copy.stem[:-1] == copy.source[:-1]
        assert copy.stem[-1] == AUGMENT_DIGITS[copy.kind]
        assert f"{AUGMENTED_DIR}/{copy.stem}.jpg" in names
        assert f"{ANNOTS_DIR}/{copy.stem}.xml" in names


def test_every_transform_is_filed_among_originals_under_lower_and_higher_numbers(default_sample):
    dest, truth = default_sample
    with zipfile.ZipFile(dest) as archive:
        names = set(archive.namelist())
    planted = defaultdict(set)
    for copy in truth.augmented_among_originals:
        assert copy.stem.endswith("1") and f"{ORIGINAL_DIR}/{copy.stem}.jpg" in names
        assert copy.source in truth.originals and copy.stem not in truth.originals
        assert copy.number_lower == (int(copy.stem[:-1]) < int(copy.source[:-1]))
        planted[copy.transform].add(copy.number_lower)
    assert planted == {transform: {True, False} for transform in AMONG_TRANSFORMS}
    sigmas = [c.param for c in truth.augmented_among_originals if c.kind == "noise"]
    assert any(3 <= s <= 4 for s in sigmas) and any(s >= 5 for s in sigmas)
    folder_angles = {c.param for c in truth.augmented if c.kind == "rotation"}
    assert folder_angles == {-90.0, 90.0, 180.0}


def test_films_have_real_sizes_modes_and_boxes(default_sample):
    dest, truth = default_sample
    modes, sizes = set(), []
    with zipfile.ZipFile(dest) as archive:
        for stem in truth.originals:
            data = archive.read(f"{ORIGINAL_DIR}/{stem}.jpg")
            assert 50_000 < len(data) < 400_000
            with Image.open(io.BytesIO(data)) as image:
                assert image.format == "JPEG"
                assert 2300 <= image.width <= 2640 and 1252 <= image.height <= 1292
                modes.add(image.mode)
                film = truth.film_truth[stem]
                assert (film.width, film.height, film.mode) == (*image.size, image.mode)
                sizes.append(image.size)
            assert boxes_of(archive, stem) == film.lesions
    assert modes == {"L", "RGB"}
    assert sum(w % 8 != 0 for w, _ in sizes) > 0.75 * len(sizes)
    assert sum(h % 8 != 0 for _, h in sizes) > 0.75 * len(sizes)
    assert len(set(sizes)) > 0.8 * len(sizes)
    grades = {box[4] for film in truth.film_truth.values() for box in film.lesions}
    assert grades == {3, 4, 5}
    assert any(not film.lesions for film in truth.film_truth.values())


def test_xml_quirks(small_sample):
    dest, truth = small_sample
    with zipfile.ZipFile(dest) as archive:
        assert len(truth.reversed_boxes) >= 2
        for stem in truth.reversed_boxes:
            box = annotation_of(archive, stem).find("object/bndbox")
            assert int(box.findtext("xmin")) > int(box.findtext("xmax"))
        for copy in (*truth.augmented, *truth.augmented_among_originals):
            size = annotation_of(archive, copy.stem).find("size")
            stated = int(size.findtext("width")), int(size.findtext("height"))
            with Image.open(io.BytesIO(archive.read(path_of(copy.stem, truth)))) as im:
                source = truth.film_truth[copy.source]
                if copy.kind == "rotation":
                    assert stated == (source.width, source.height)
                    turned = copy.transform in ("rot-90", "rot+90")
                    want = (source.height, source.width) if turned else stated
                    assert im.size == want
                else:
                    assert stated == im.size


def test_planted_bad_inputs_fail_as_described(small_sample):
    dest, truth = small_sample
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
        blank = np.asarray(open_image("blank film (no radiographic content)").convert("L"))
        assert blank.shape == (1280, 2400) and blank.max() - blank.min() <= 2 and blank.max() < 16
        sixteen = open_image("16-bit grayscale (png data, mode I;16, under a .jpg name)")
        assert (sixteen.format, sixteen.mode) == ("PNG", "I;16")
        with pytest.raises(ElementTree.ParseError):
            annotation_of(archive, by_reason["malformed XML"].stem)
        names_of = {
            r: annotation_of(archive, by_reason[r].stem).findtext("object/name")
            for r in reasons
            if "grade" in r
        }
        assert sorted(names_of.values()) == ["7", "lesion"]
        nan = annotation_of(archive, by_reason["NaN coordinate"].stem).find("object/bndbox")
        assert nan.findtext("xmin") == "NaN"
        negative = annotation_of(archive, by_reason["negative coordinate"].stem).find(
            "object/bndbox"
        )
        assert int(negative.findtext("ymin")) < 0
        flat = annotation_of(archive, by_reason["degenerate (zero-area) box"].stem).find(
            "object/bndbox"
        )
        assert flat.findtext("xmin") == flat.findtext("xmax")
        for reason in (r for r in reasons if r.startswith("duplicate stem")):
            paths = [b.path for b in truth.bad_inputs if b.reason == reason]
            assert len(paths) == 2 and len({Path(p).stem for p in paths}) == 1
            assert set(paths) <= names


def test_stems_beyond_the_four_digit_numbers_stay_distinct_and_valid():
    """A scale corpus of more than 9,999 films (issue 25's 16k point) runs past the archive's
    four-digit numbers: the stems that follow are 6-digit, accepted by the index and distinct
    as numbers; the first 9,999 are drawn exactly as a planner that never runs out draws them."""
    from curation.index.index import STEM_PATTERN
    from curation.sample.planner import Planner

    wide, narrow = Planner(7, 9999), Planner(7, 9999)
    stems = [wide.next_stem() for _ in range(16_000)]
    assert stems[:9999] == [narrow.next_stem() for _ in range(9999)]
    assert all(STEM_PATTERN.fullmatch(s) and s.endswith("1") for s in stems)
    assert len({int(s[:-1]) for s in stems}) == 16_000
    assert all(len(s) == 6 and not s.startswith("0") for s in stems[9999:])
