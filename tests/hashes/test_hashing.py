import io

import numpy as np
import pytest
from PIL import Image

from curation.core.parallel import LocalMap
from curation.core.records import Fate, Kind
from curation.hashes.hash_films import hash_films
from curation.hashes.hashing import AverageHash512, CorruptJpeg, View, hamming, hash_version
from curation.index.index import index_source
from curation.index.originals import drop_augmented_by_name
from support import film_kit as kit
from tests.hostile_films import (
    bit_flipped_jpeg,
    film_bytes,
    truncated_header_jpeg,
    voc,
    write_source,
)


def _save(array: np.ndarray, path, mode: str = "L") -> str:
    Image.fromarray(array).convert(mode).save(path, quality=95)
    return str(path)


def test_bits_follow_the_definition_on_a_half_bright_film(tmp_path):
    film = np.zeros((1280, 2400), dtype=np.uint8)
    film[:, 1200:] = 220  # right half bright: in every row, the 16 right cells are 1
    path = _save(film, tmp_path / "half.jpg")
    for decode in ("draft", "full"):
        bits = np.unpackbits(
            np.frombuffer(AverageHash512(decode).hash_views(path)[View.identity], np.uint8)
        )
        grid = bits.reshape(16, 32)
        assert grid[:, :15].sum() == 0
        assert grid[:, 17:].all()


def test_views_are_the_hash_of_the_turned_film(tmp_path):
    rng = np.random.default_rng(1)
    film = (rng.random((16, 32)) * 255).astype(np.uint8)
    film = np.asarray(Image.fromarray(film).resize((2400, 1280), Image.Resampling.BICUBIC))
    path = _save(film, tmp_path / "film.jpg")
    mirrored = _save(film[:, ::-1], tmp_path / "mirrored.jpg")
    hasher = AverageHash512("full")
    views = hasher.hash_views(path)
    assert hamming(views[View.mirror], hasher.hash_views(mirrored)[View.identity]) <= 4
    assert hamming(views[View.identity], views[View.mirror]) > 100


@pytest.mark.parametrize("size", [(2400, 1280), (2641, 1299), (1299, 2641), (333, 167)])
def test_turned_grids_equal_the_hash_of_the_turned_picture(size):
    """The views come from turning the 32 x 16 grid, not the picture: same bits exactly."""
    rng = np.random.default_rng(size[0])
    coarse = Image.fromarray((rng.random((40, 80)) * 255).astype(np.uint8))
    grey = coarse.resize(size, Image.Resampling.BICUBIC)
    hasher = AverageHash512()
    views = hasher.hash_grey_views(grey)
    turns = {
        View.identity: None,
        View.mirror: Image.Transpose.FLIP_LEFT_RIGHT,
        View.rot90: Image.Transpose.ROTATE_90,
        View.rot180: Image.Transpose.ROTATE_180,
        View.rot270: Image.Transpose.ROTATE_270,
    }
    for view, turn in turns.items():
        turned = grey if turn is None else grey.transpose(turn)
        assert views[view] == hasher.hash_image(turned), view


def test_rgb_and_grey_copies_hash_alike(tmp_path):
    rng = np.random.default_rng(2)
    film = np.asarray(
        Image.fromarray((rng.random((16, 32)) * 255).astype(np.uint8)).resize((2400, 1280))
    )
    grey = AverageHash512().hash_views(_save(film, tmp_path / "l.jpg"))[View.identity]
    rgb = AverageHash512().hash_views(_save(film, tmp_path / "rgb.jpg", "RGB"))[View.identity]
    assert hamming(grey, rgb) <= 4


def test_version_names_decoding():
    assert hash_version("draft") != hash_version("full")
    assert "32x16" in hash_version("draft")


@pytest.mark.parametrize(
    ("a", "b", "d"), [(b"\x00" * 64, b"\x00" * 64, 0), (b"\xff" * 64, b"\x00" * 64, 512)]
)
def test_hamming(a, b, d):
    assert hamming(a, b) == d


@pytest.mark.parametrize(
    "jpeg",
    [truncated_header_jpeg(), bit_flipped_jpeg(), film_bytes(3)[:-600]],
    ids=["truncated header", "flipped bits", "ends early"],
)
def test_the_hash_step_rejects_a_film_whose_data_is_corrupt_or_ends_early(tmp_path, jpeg):
    with Image.open(io.BytesIO(jpeg)) as image:  # what the header check sees: a usable JPEG
        assert image.format == "JPEG" and image.mode == "L"
    root = write_source(tmp_path / "source", {"00011": (jpeg, voc("00011", []))})
    records = drop_augmented_by_name(index_source(root, map=LocalMap(1)))
    settled, hashes = hash_films(root, records, map=LocalMap(1))
    [film] = [r for r in settled if r.kind is Kind.image]
    assert film.fate is Fate.rejected and film.reason.startswith("corrupt JPEG data")
    assert hashes == {}
    with pytest.raises(CorruptJpeg):
        AverageHash512().hash_views(io.BytesIO(jpeg), strict=True)


def test_the_strict_decode_sees_exactly_the_pixels_of_pillows_draft(tmp_path):
    """The hash step decodes strictly with simplejpeg; the audit and the docs use Pillow's
    draft: both must give the same pixels, or a hash would depend on who computed it."""
    films = [kit.film(seed, size) for seed, size in ((1, (2457, 1263)), (2, (1271, 2403)))]
    for number, picture in enumerate(films):
        path = kit.save(picture, tmp_path / f"{number}.jpg", 85)
        for decode in ("draft", "full"):
            hasher = AverageHash512(decode)
            strict = np.asarray(hasher.open_grey(path, strict=True))
            assert np.array_equal(strict, np.asarray(hasher.open_grey(path)))
        rgb = tmp_path / f"{number}-rgb.jpg"
        Image.open(path).convert("RGB").save(rgb, quality=80, subsampling=2)
        hasher = AverageHash512()
        assert hasher.hash_views(rgb, strict=True) == hasher.hash_views(rgb)
