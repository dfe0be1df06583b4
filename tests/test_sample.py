"""The sample archive must look like the real one and carry every planted case its truth names,
and it must be drawn without ever consulting the project's hash or detection code."""

from __future__ import annotations

import ast
import io
import itertools
import re
import subprocess
import sys
import zipfile
from collections import defaultdict
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import pytest
from PIL import Image, JpegImagePlugin, UnidentifiedImageError

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
SAMPLE_PACKAGE = Path(__file__).parents[1] / "curation" / "sample"
AMONG_TRANSFORMS = {
    "noise-faint",
    "noise-strong",
    "scaling",
    "mirror",
    "rot-90",
    "rot+90",
    "rot180",
}
ANGLES = {"rot-90": -90, "rot+90": 90, "rot180": 180}


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> tuple[Path, SampleTruth]:
    dest = tmp_path_factory.mktemp("small") / "sample.zip"
    return dest, write_sample_archive(dest, seed=3, films=SMALL)


@pytest.fixture(scope="module")
def default(tmp_path_factory) -> tuple[Path, SampleTruth]:
    """The default archive, as make splits and the chain's tests write it."""
    dest = tmp_path_factory.mktemp("default") / "sample.zip"
    return dest, write_sample_archive(dest)


def _xml(archive: zipfile.ZipFile, stem: str) -> ElementTree.Element:
    return ElementTree.fromstring(archive.read(f"{ANNOTS_DIR}/{stem}.xml"))


def _xml_boxes(archive: zipfile.ZipFile, stem: str) -> tuple[tuple[int, ...], ...]:
    """The boxes an XML states, corners ordered, sorted."""
    boxes = []
    for obj in _xml(archive, stem).iter("object"):
        corners = [int(obj.findtext(f"bndbox/{t}")) for t in ("xmin", "ymin", "xmax", "ymax")]
        x1, x2 = sorted(corners[0::2])
        y1, y2 = sorted(corners[1::2])
        boxes.append((x1, y1, x2, y2, int(obj.findtext("name"))))
    return tuple(sorted(boxes))


def _grey(archive: zipfile.ZipFile, path: str) -> np.ndarray:
    with Image.open(io.BytesIO(archive.read(path))) as image:
        return np.asarray(image.convert("L"), dtype=np.float32)


def _path_of(stem: str, truth: SampleTruth) -> str:
    folder_copies = {copy.stem for copy in truth.augmented}
    return f"{AUGMENTED_DIR if stem in folder_copies else ORIGINAL_DIR}/{stem}.jpg"


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


def test_the_generator_imports_no_detection_code():
    """The sample package may import only itself from curation, and loads nothing else."""
    for module in SAMPLE_PACKAGE.glob("*.py"):
        for node in ast.walk(ast.parse(module.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                if name.split(".")[0] == "curation":
                    assert name.startswith("curation.sample"), (module.name, name)
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
        m for m in loaded if m.startswith("curation.") and not m.startswith("curation.sample")
    ]
    assert outside == []


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
    numbers = [int(s[:-1]) for s in truth.originals]
    assert len(set(numbers)) == len(numbers)
    kinds = [copy.kind for copy in truth.augmented]
    assert all(kinds.count(kind) >= 3 for kind in AUGMENT_DIGITS)
    for copy in truth.augmented:
        assert copy.stem[:-1] == copy.source[:-1]
        assert copy.stem[-1] == AUGMENT_DIGITS[copy.kind]
        assert f"{AUGMENTED_DIR}/{copy.stem}.jpg" in names
        assert f"{ANNOTS_DIR}/{copy.stem}.xml" in names


def test_every_transform_is_filed_among_originals_under_lower_and_higher_numbers(default):
    dest, truth = default
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


def test_films_have_real_sizes_modes_and_boxes(default):
    dest, truth = default
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
            assert _xml_boxes(archive, stem) == film.lesions
    assert modes == {"L", "RGB"}
    assert sum(w % 8 != 0 for w, _ in sizes) > 0.75 * len(sizes)
    assert sum(h % 8 != 0 for _, h in sizes) > 0.75 * len(sizes)
    assert len(set(sizes)) > 0.8 * len(sizes)
    grades = {box[4] for film in truth.film_truth.values() for box in film.lesions}
    assert grades == {3, 4, 5}
    assert any(not film.lesions for film in truth.film_truth.values())


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
    return mask


def _undone(copy_grey: np.ndarray, transform: str, size: tuple[int, int]) -> np.ndarray:
    if transform == "mirror":
        copy_grey = copy_grey[:, ::-1]
    elif transform in ANGLES:
        copy_grey = np.rot90(copy_grey, k=-ANGLES[transform] // 90)
    return np.asarray(Image.fromarray(copy_grey).resize(size, Image.BILINEAR))


def test_copies_show_their_source_and_carry_its_boxes_moved_with_them(small):
    """Each copy, turned back, shows its source's pixels; its XML boxes are the source's boxes
    carried through the same transform (checked on a mask, not with the generator's code)."""
    dest, truth = small
    with zipfile.ZipFile(dest) as archive:
        for copy in (*truth.augmented, *truth.augmented_among_originals):
            source = truth.film_truth[copy.source]
            size = (source.width, source.height)
            own = _grey(archive, _path_of(copy.stem, truth))
            base = _grey(archive, f"{ORIGINAL_DIR}/{copy.source}.jpg")
            small_size = (size[0] // 8, size[1] // 8)
            back = _undone(own, copy.transform, size)
            shrink = [
                np.asarray(Image.fromarray(a).resize(small_size, Image.BOX)) for a in (back, base)
            ]
            assert np.abs(shrink[0] - shrink[1]).mean() < 3.0, copy
            moved = _moved(_mask(size, source.lesions), copy.transform, copy.param)
            expected = []
            for index, (*_, pai) in enumerate(source.lesions, start=1):
                ys, xs = np.nonzero(moved == index)
                expected.append((xs.min(), ys.min(), xs.max(), ys.max(), pai))
            stated = _xml_boxes(archive, copy.stem)
            assert len(stated) == len(expected), copy
            for got, want in zip(stated, sorted(expected), strict=True):
                assert (
                    got[4] == want[4]
                    and max(abs(g - w) for g, w in zip(got, want, strict=True)) <= 1
                )


def test_xml_quirks(small):
    dest, truth = small
    with zipfile.ZipFile(dest) as archive:
        assert len(truth.reversed_boxes) >= 2
        for stem in truth.reversed_boxes:
            box = _xml(archive, stem).find("object/bndbox")
            assert int(box.findtext("xmin")) > int(box.findtext("xmax"))
        for copy in (*truth.augmented, *truth.augmented_among_originals):
            size = _xml(archive, copy.stem).find("size")
            stated = int(size.findtext("width")), int(size.findtext("height"))
            with Image.open(io.BytesIO(archive.read(_path_of(copy.stem, truth)))) as im:
                source = truth.film_truth[copy.source]
                if copy.kind == "rotation":
                    assert stated == (source.width, source.height)
                    turned = copy.transform in ("rot-90", "rot+90")
                    want = (source.height, source.width) if turned else stated
                    assert im.size == want
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


def test_refilings_are_one_radiograph_at_recorded_exposures(small):
    """Re-filings: byte-identical, re-encoded, or re-exposed exactly as the truth records."""
    dest, truth = small
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
            a = _grey(archive, f"{ORIGINAL_DIR}/{pair.first}.jpg")
            b = _grey(archive, f"{ORIGINAL_DIR}/{pair.second}.jpg")
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


def test_originals_and_augmented_copies_carry_different_encoder_signatures(small):
    dest, truth = small
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
            seen = _signature(archive.read(_path_of(copy.stem, truth)))
            assert seen["jfif"] and not seen["exif"] and seen["comment"] is None, copy
            assert (seen["mode"], seen["sampling"]) == ("RGB", 2)
            assert seen["tables"] == pillow_tables
            assert copy.encoder == "pillow-script"
    assert set(truth.encoders) == {"imaging-system", "pillow-script"}


def test_patient_numbers_mark_real_patients_and_one_copied_template(default):
    dest, truth = default
    members = defaultdict(set)
    with zipfile.ZipFile(dest) as archive:
        for stem in truth.patient_number_in_filename:
            name = _xml(archive, stem).findtext("filename")
            members[re.fullmatch(r"PN(\d{6})_pano\.jpg", name).group(1)].add(stem)
        unnumbered = [
            s for s in truth.originals if not _xml(archive, s).findtext("filename").startswith("PN")
        ]
    sets = [frozenset(group) for group in members.values()]
    patients = {frozenset(group) for group in truth.patient_groups}
    pairs = [(p.first, p.second) for p in truth.double_annotated]
    visits = [*truth.lookalike_groups, *truth.distant_visit_groups, *pairs]
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


def test_visits_differ_from_each_other(default):
    """Look-alike and distant visits are separate exposures, never pixel copies."""
    dest, truth = default
    assert len(truth.lookalike_groups) >= 4 and len(truth.distant_visit_groups) >= 4
    with zipfile.ZipFile(dest) as archive:
        for group in (*truth.lookalike_groups, *truth.distant_visit_groups):
            grey = {
                s: np.asarray(
                    Image.fromarray(_grey(archive, f"{ORIGINAL_DIR}/{s}.jpg")).resize((256, 128))
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
            assert _xml_boxes(archive, twin.stem) == _xml_boxes(archive, copy.stem)
    assert {c.number_lower for c in refiled.values()} == {True, False}


def _distinct_film_distances(dest: Path, truth: SampleTruth) -> np.ndarray:
    """Hamming distances (the project's 512-bit hash, as is) between films of different
    patients: measured after the fact, the generator never sees them."""
    from curation.hashing import AverageHash512, View, hamming

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


def test_distinct_films_spread_like_the_real_archive(default):
    """Real films: distinct films min 61, 1st percentile 93, median 175 bits apart. The sample
    must show a comparable spread (not one pushed away from the hash's radius), and some
    visits of one patient must be as far apart as unrelated films."""
    from curation.hashing import AverageHash512, View, hamming

    dest, truth = default
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
