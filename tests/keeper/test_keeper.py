"""Which film of a same-picture group is kept (``curation.keeper``), with the facts read from
project-made films (``support/film_kit.py``), and the sample's planted copies keep their
originals; the order of the rules themselves: ``test_keeper_rules.py``."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import cv2
import numpy as np
import pyarrow.parquet as pq
import pytest
from PIL import Image

import support.film_kit as kit
from curation.core.parallel import LocalMap
from curation.core.records import Kind, SourceRecord
from curation.core.vocabulary import SAME_PICTURE_RADIUS
from curation.hashes.hash_films import hash_films
from curation.hashes.hashing import AverageHash512, View
from curation.index.index import index_source
from curation.index.originals import drop_augmented_by_name
from curation.index.provenance import EncoderEvidence, encoder_signature
from curation.keeper.evidence import (
    FileFacts,
    header_and_border,
    keeper_facts,
    tone_reference,
    usual_encoder,
)
from curation.keeper.groups import pairs_to_reencode, same_picture_groups
from curation.keeper.reencode import (
    REENCODED_SHARE,
    ReencodeJob,
    reencoding_misses,
    written_from,
)
from curation.keeper.step import keep_one_per_group
from curation.keeper.tone import REFERENCE_FILMS
from curation.same_picture.candidates import SamePicture
from curation.same_picture.detect import Progress, find_same_pictures
from curation.same_picture.pixel_cache import ComparisonCache
from curation.same_picture.pixels import Comparison
from curation.sample import SampleTruth, write_sample_archive
from curation.source.download import fetch_source
from tests.keeper.keeper_films import _jpeg
from tests.sample_reading import SMALL_FILMS, SMALL_SEED


def _pair(a: str, b: str, view: View = View.identity) -> SamePicture:
    return SamePicture(a, b, view, 3, Comparison(0.4, None, True))


SIZE = (768, 384)
ORIGINALS = "Original JPG Images"
AUGMENTED = "Augmentation JPG Images"


def _radiograph(seed: int) -> np.ndarray:
    """A kit film with an up and a down, as a panoramic film has: bright above, dark below."""
    picture = kit.film(seed, SIZE)
    rows = np.linspace(40, -40, SIZE[1])[:, None]
    return np.clip(0.6 * picture + 50 + rows, 0, 255)  # no black corner, as on real films


class Archive:
    """Films written to a folder as the archive files them, with their records and hashes."""

    def __init__(self, root: Path):
        self.root = root
        self.records: list[SourceRecord] = []
        self.hashes: dict[str, dict[View, bytes]] = {}

    def add(self, stem: str, data: bytes, folder: str = ORIGINALS) -> None:
        path = f"{folder}/{stem}.jpg"
        (self.root / folder).mkdir(parents=True, exist_ok=True)
        (self.root / path).write_bytes(data)
        with Image.open(io.BytesIO(data)) as image:
            size, signature = image.size, encoder_signature(image)
        self.records.append(
            SourceRecord(
                path,
                Kind.image,
                stem,
                hashlib.sha256(data).hexdigest(),
                len(data),
                folder,
                *size,
                encoder=signature,
            )
        )
        if folder == ORIGINALS:
            self.hashes[stem] = AverageHash512().hash_views(self.root / path)

    def keep(self, a: str, b: str, view: View = View.identity) -> tuple[str, str]:
        """The kept film of the group of ``a`` and ``b``, and the dropped film's evidence."""
        facts = keeper_facts(
            self.root, self.records, self.hashes, [(a, b)], EncoderEvidence({}), 32
        )
        pair = _pair(a, b, view)
        paths = {r.film_id: str(self.root / r.path) for r in self.records}
        reencoded = {}
        for tied in pairs_to_reencode([pair], facts):
            misses = reencoding_misses(ReencodeJob(paths[tied.a], paths[tied.b], tied.view))
            reencoded.update([written_from(tied.a, tied.b, misses) or ("", "")])
        [group] = same_picture_groups([pair], facts, {}, reencoded)
        return group.kept, group.dropped[0].evidence


@pytest.fixture
def archive(tmp_path) -> Archive:
    """Ten upright films filed as originals (the archive that tells which way is up)."""
    found = Archive(tmp_path)
    for n in range(10):
        found.add(f"5{n}0001", _jpeg(_radiograph(100 + n)))
    return found


def test_a_half_turned_copy_numbered_lower_is_never_kept(archive):
    picture = _radiograph(7)
    archive.add("36531", _jpeg(picture))
    archive.add("12341", _jpeg(np.rot90(picture, 2)))
    kept, evidence = archive.keep("36531", "12341")
    assert kept == "36531" and evidence.startswith("it is turned (a half turn, upside down)")


def test_a_film_byte_identical_to_an_augmentation_copy_is_the_copy(archive):
    picture = _radiograph(7)
    mirrored = _jpeg(picture[:, ::-1])
    archive.add("036531", _jpeg(picture))
    archive.add("036534", mirrored, AUGMENTED)  # the archive's own mirror of 036531
    archive.add("012341", mirrored)  # the same bytes filed among the originals, lower
    kept, evidence = archive.keep("036531", "012341")
    assert kept == "036531"
    assert evidence == (
        "it is byte-identical to 036534 of the augmentation folder: "
        "the archive's own augmented copy"
    )


def test_the_same_picture_as_an_augmentation_mirror_is_the_copy_but_not_its_own(archive):
    picture = _radiograph(7)
    archive.add("036531", _jpeg(picture))
    archive.add("036534", _jpeg(picture[:, ::-1]), AUGMENTED)
    archive.add("036532", _jpeg(kit.noised(picture, 4, 1)), AUGMENTED)  # its own noise copy
    reencoded = np.asarray(Image.open(io.BytesIO(_jpeg(picture[:, ::-1]))), dtype=np.float64)
    archive.add("012341", _jpeg(kit.exposed(reencoded, gamma=1.1)))
    kept, evidence = archive.keep("036531", "012341")
    assert kept == "036531"
    assert evidence.startswith("it is the same picture as 036534 of the augmentation folder")


@pytest.mark.parametrize("width", [768, 765])  # block grid kept, and shifted by the mirror
def test_a_mirror_at_the_originals_own_quality_numbered_lower_is_the_copy(archive, width):
    """A script's mirror at the original's size, quality and encoder: nothing in the header or
    the picture tells it, but encoding the original's picture mirrored with the copy's tables
    gives the copy's pixels, and not the other way round."""
    original = _jpeg(_radiograph(7)[:, :width])
    decoded = np.asarray(Image.open(io.BytesIO(original)), dtype=np.float64)
    archive.add("36531", original)
    archive.add("12341", _jpeg(decoded[:, ::-1]))
    kept, evidence = archive.keep("36531", "12341", View.mirror)
    assert kept == "36531"
    assert evidence.startswith("it is 36531 re-encoded: encoding that film's picture")


def test_a_reencoding_stays_silent_on_a_copy_it_cannot_reproduce(archive):
    """A blurred copy at the original's quality is not a re-encoding of either film: the
    rule says nothing and the number decides (the lower-numbered copy is kept)."""
    original = _jpeg(_radiograph(7))
    decoded = np.asarray(Image.open(io.BytesIO(original)), dtype=np.float64)
    archive.add("36531", original)
    archive.add("12341", _jpeg(cv2.GaussianBlur(decoded, (0, 0), 1.0)))
    paths = [str(archive.root / r.path) for r in archive.records[-2:]]
    misses = reencoding_misses(ReencodeJob(*paths, View.identity))
    assert all(m is not None and m > REENCODED_SHARE for m in misses), misses
    assert written_from("36531", "12341", misses) is None


def test_a_padded_copy_and_a_copy_with_filled_corners_are_dropped(archive):
    picture = _radiograph(7)
    archive.add("36531", _jpeg(picture))
    height, width = picture.shape
    padded = np.zeros((height + 40, width + 40))
    padded[20:-20, 20:-20] = picture
    archive.add("12341", _jpeg(padded))
    kept, evidence = archive.keep("36531", "12341")
    assert kept == "36531" and evidence.startswith("it is padded")
    turned = Image.fromarray(picture.astype(np.uint8)).rotate(2, Image.Resampling.BILINEAR)
    archive.add("22341", _jpeg(np.asarray(turned)))
    kept, evidence = archive.keep("36531", "22341")
    assert kept == "36531" and evidence.startswith("its corners are filled black")


def test_tone_is_read_only_for_groups_the_files_leave_tied(archive, monkeypatch):
    """A full-size tone decode per film is spent only where it can decide: a group whose
    padded copy the border already names reads no tone (not even the reference sample),
    and a group tied on every fact of the files reads it for each of its films."""
    import curation.keeper.evidence as evidence

    read: list[str] = []
    real_tone_of = evidence.tone_of

    def counted(path):
        read.append(Path(path).stem)
        return real_tone_of(path)

    monkeypatch.setattr(evidence, "tone_of", counted)
    picture = _radiograph(7)
    archive.add("36531", _jpeg(picture))
    padded = np.zeros((picture.shape[0] + 40, picture.shape[1] + 40))
    padded[20:-20, 20:-20] = picture
    archive.add("12341", _jpeg(padded))
    kept, _ = archive.keep("36531", "12341")
    assert kept == "36531" and read == []
    archive.add("22341", _jpeg(kit.exposed(picture, gamma=1.25)))
    archive.keep("36531", "22341")  # same frame, quality and encoder: the files tie
    assert {"36531", "22341"} <= set(read)


def test_a_film_filed_twice_is_not_measured_against_itself(archive, monkeypatch):
    """The same bytes filed under two numbers measure alike everywhere: no tone decode (not
    even the reference sample), no re-encoding either way, one header read for the two;
    the lower number is kept, recorded as undecided."""
    import curation.keeper.evidence as evidence

    toned: list[str] = []
    headers: list[str] = []
    real_tone_of, real_header = evidence.tone_of, evidence.header_and_border
    monkeypatch.setattr(evidence, "tone_of", lambda path: toned.append(path) or real_tone_of(path))
    monkeypatch.setattr(
        evidence, "header_and_border", lambda path: headers.append(path) or real_header(path)
    )
    data = _jpeg(_radiograph(7))
    archive.add("36531", data)
    archive.add("90131", data)
    facts = keeper_facts(
        archive.root, archive.records, archive.hashes, [("36531", "90131")], EncoderEvidence({}), 32
    )
    assert toned == [] and len(headers) == 1
    assert pairs_to_reencode([_pair("36531", "90131", View.identity)], facts) == []
    kept, why = archive.keep("36531", "90131")
    assert kept == "36531" and why.startswith("undecided: nothing in the files tells which")


def test_quality_is_estimated_from_the_tables_and_the_lower_one_is_the_copy(archive):
    picture = _radiograph(7)
    for quality in (50, 70, 95):
        path = archive.root / f"q{quality}.jpg"
        path.write_bytes(_jpeg(picture, quality))
        assert header_and_border(path) == FileFacts(quality)
    archive.add("36531", _jpeg(picture, 95))
    archive.add("12341", _jpeg(picture, 70))
    kept, evidence = archive.keep("36531", "12341")
    assert kept == "36531" and evidence.startswith("its JPEG quality is lower (about 70")


def test_the_usual_encoder_is_that_of_most_films_and_a_progressive_copy_is_unusual(archive):
    picture = _radiograph(7)
    archive.add("36531", _jpeg(picture))
    progressive = io.BytesIO()
    Image.fromarray(picture.astype(np.uint8)).save(
        progressive, "JPEG", quality=90, progressive=True
    )
    archive.add("12341", progressive.getvalue())
    assert usual_encoder(archive.records) == archive.records[0].encoder
    kept, evidence = archive.keep("36531", "12341")
    assert kept == "36531" and evidence.startswith("its encoder signature is not the one")
    assert usual_encoder(archive.records[-2:]) == ""  # one of two is no majority


def _decoded(data: bytes) -> np.ndarray:
    """The film as a script reads it: 8-bit grey levels."""
    with Image.open(io.BytesIO(data)) as image:
        return np.asarray(image.convert("L"))


def test_a_clahe_copy_at_the_originals_own_quality_is_dropped_on_local_contrast(archive):
    original = _jpeg(_radiograph(7))
    archive.add("36531", original)
    clahe = cv2.createCLAHE(clipLimit=2.0, tileGridSize=(8, 8)).apply(_decoded(original))
    archive.add("12341", _jpeg(clahe))  # the same quality and encoder, numbered lower
    kept, evidence = archive.keep("36531", "12341")
    assert kept == "36531" and evidence.startswith("its local contrast is raised"), evidence


@pytest.mark.parametrize(("gamma", "gain", "offset"), [(0.8, 1, 0), (1.25, 1, 0), (1, 1.15, -12)])
def test_a_tone_curve_copy_at_the_originals_own_quality_is_dropped_on_its_histogram(
    archive, gamma, gain, offset
):
    original = _jpeg(_radiograph(7))
    archive.add("36531", original)
    levels = _decoded(original).astype(np.float64)
    archive.add("12341", _jpeg(np.round(kit.exposed(levels, offset, gain, gamma))))
    kept, evidence = archive.keep("36531", "12341")
    assert kept == "36531" and evidence.startswith("its grey histogram is combed"), evidence


def test_the_typical_tone_is_read_on_a_bounded_sample_the_same_on_every_run():
    records = [
        SourceRecord(f"{ORIGINALS}/{n}.jpg", Kind.image, str(n), f"{n * 7919 % 1000:03d}", 1)
        for n in range(REFERENCE_FILMS + 50)
    ]
    reference = tone_reference(records)
    assert len(reference) == REFERENCE_FILMS
    assert reference == tone_reference(records[::-1])
    assert [r.sha256 for r in reference] == sorted(r.sha256 for r in records)[:REFERENCE_FILMS]


# --- the sample's planted copies ------------------------------------------------------------


def _assert_copies_keep_their_originals(truth: SampleTruth, rows: list[dict]) -> dict[str, dict]:
    images = {r["film_id"]: r for r in rows if r["kind"] == "image"}
    twin_of = {}
    for pair in truth.double_annotated:
        twin_of[pair.first], twin_of[pair.second] = pair.second, pair.first
    assert truth.augmented_among_originals
    for copy in truth.augmented_among_originals:
        row = images[copy.stem]
        assert row["fate"] == "dropped", copy
        assert images[row["related"]]["fate"] in {"kept", "pending"}
        assert row["related"] in {copy.source, twin_of.get(copy.source)}, (copy, row)
        assert "undecided" not in row["reason"], (copy, row["reason"])
    return images


def test_the_samples_planted_copies_keep_their_originals_on_evidence(sample_zip, sample_build):
    rows = pq.read_table(sample_build / "manifest.parquet").to_pylist()
    _assert_copies_keep_their_originals(sample_zip[1], rows)


class _Silent:
    """A progress bar that shows nothing (the run's tracker, without a display)."""

    def total(self, count: int) -> None:
        pass

    def advance(self, count: int) -> None:
        pass


def test_copies_filed_again_among_the_originals_are_named_by_the_augmentation_folder(
    tmp_path_factory,
):
    """Every augmentation-folder copy also filed, byte for byte, among the originals: the
    archive's own folder names each one the copy (the chain run up to the same-picture step)."""
    work = tmp_path_factory.mktemp("all-copies")
    truth = write_sample_archive(
        work / "sample.zip", seed=SMALL_SEED, films=SMALL_FILMS, all_copies_among_originals=True
    )
    root = fetch_source(str(work / "sample.zip"), work, work / "lock.json", progress=False).root
    records = drop_augmented_by_name(index_source(root, map=LocalMap(1)))
    records, hashes = hash_films(root, records, map=LocalMap(1))
    cache = ComparisonCache(work / "pixels.parquet")
    progress = Progress(lambda _: None, lambda _: None, lambda description, total: _Silent())
    confirmed = find_same_pictures(
        root, records, hashes, SAME_PICTURE_RADIUS, cache, LocalMap(1), progress
    )
    settled, _ = keep_one_per_group(root, records, hashes, confirmed, cache, LocalMap(1))
    rows = [
        {"kind": r.kind.value, "film_id": r.film_id, "fate": r.fate.value, "related": r.related}
        | {"reason": r.reason}
        for r in settled
    ]
    images = _assert_copies_keep_their_originals(truth, rows)
    filed = [c for c in truth.augmented_among_originals if c.filed_copy_of]
    assert filed
    for copy in filed:
        expected = f"byte-identical to {copy.filed_copy_of} of the augmentation folder"
        assert expected in images[copy.stem]["reason"], copy
