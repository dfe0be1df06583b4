"""The content check (``curation.hashes.content``): a blank, near-black or uniform film is
rejected with its reason by the hash step, on the hash's own decode read at one eighth; a film
the index refuses, or an augmented copy the originals step drops, is never decoded for it."""

import io

import numpy as np
import pytest
from PIL import Image

from bench.margins.content import film_figures
from curation.core.parallel import LocalMap
from curation.core.records import Fate, Kind
from curation.core.vocabulary import Decode
from curation.hashes import content, hash_films
from curation.index.index import index_source
from curation.index.originals import drop_augmented_by_name
from tests.hostile_films import film_bytes, voc, write_source


def _jpeg(grey: np.ndarray, mode: str = "L") -> bytes:
    buffer = io.BytesIO()
    picture = Image.fromarray(np.clip(grey, 0, 255).round().astype(np.uint8), "L")
    picture.convert(mode).save(buffer, "JPEG", quality=90)
    return buffer.getvalue()


def _grey(seed: int) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(film_bytes(seed))).convert("L"), dtype=np.float64)


def _film_fates(
    tmp_path, films: dict[str, tuple[bytes, str]], decode: Decode = Decode.draft
) -> dict[str, tuple[Fate, str]]:
    """Each film's fate once the index, originals and hash steps have run."""
    root = write_source(tmp_path / "source", films)
    records = drop_augmented_by_name(index_source(root, map=LocalMap(1)))
    settled, _ = hash_films.hash_films(root, records, decode=decode, map=LocalMap(1))
    return {r.stem: (r.fate, r.reason) for r in settled if r.kind is Kind.image}


EMPTY = (1280, 2400)
RAMP = np.linspace(0.0, 1.0, EMPTY[1])[None, :] * np.ones(EMPTY)
NOISE = np.random.default_rng(3).normal(0.0, 1.0, EMPTY)
# Films with no content, each like the brightest or most spread of its kind measured against
# the real films (docs/design.md, "Films with no content"), and the reason each must get.
NO_CONTENT = {
    "black": (np.zeros(EMPTY), "near-black"),
    "near-black, an exposure ramp 0-40 and noise": (40 * RAMP + 4 * NOISE, "near-black"),
    "white": (np.full(EMPTY, 255.0), "uniform"),
    "mid-grey with noise": (128 + 20 * NOISE, "uniform"),
    "grey, an exposure ramp 110-140 and noise": (110 + 30 * RAMP + 4 * NOISE, "uniform"),
}


@pytest.mark.parametrize("name", sorted(NO_CONTENT))
@pytest.mark.parametrize("mode", ["L", "RGB"])
def test_a_film_with_no_radiographic_content_is_rejected_with_its_reason(tmp_path, name, mode):
    grey, kind = NO_CONTENT[name]
    fates = _film_fates(tmp_path, {"00011": (_jpeg(grey, mode), voc("00011"))})
    fate, reason = fates["00011"]
    assert fate is Fate.rejected and reason.startswith(f"no radiographic content: {kind}")


def test_dim_and_flat_films_with_content_are_kept(tmp_path):
    """Like the darkest real film (brightest 1% at grey level 160) and the least spread one
    (levels spanning 129): a threshold moved up to them would reject real films."""
    dim, flat = _jpeg(_grey(1) * 0.62), _jpeg(120 + (_grey(2) - _grey(2).mean()) * 0.5, "RGB")
    assert film_figures(dim).brightness < 155  # as the hash step reads them
    assert film_figures(flat).spread < 125
    fates = _film_fates(tmp_path, {"00011": (dim, voc("00011")), "00021": (flat, voc("00021"))})
    assert fates == {"00011": (Fate.pending, ""), "00021": (Fate.pending, "")}


@pytest.mark.parametrize("decode", [Decode.draft, Decode.full])
def test_a_noisy_blank_film_is_read_at_one_eighth_whatever_the_decode(tmp_path, decode):
    """A 512-pixel film is drafted at a half, and decoded in full with ``--decode full``: read
    there, a blank film's sensor noise spans 46 grey levels at a half and 94 in full, against a
    limit of 85; averaged to an eighth, as libjpeg's own eighth reads a film of the archive's
    size, it spans 12."""
    noisy = 128 + 20 * np.random.default_rng(4).normal(0.0, 1.0, (512, 512))
    jpeg = _jpeg(noisy)
    full = np.asarray(Image.open(io.BytesIO(jpeg)).convert("L"))
    assert np.subtract(*np.percentile(full, (99, 1))) > content.BLANK_SPREAD  # in full: kept
    fates = _film_fates(tmp_path, {"00011": (jpeg, voc("00011"))}, decode)
    assert fates["00011"][0] is Fate.rejected and "uniform" in fates["00011"][1]


def test_an_eighth_is_read_from_any_decode_of_the_film():
    """At an eighth a film is one grey level a JPEG block, whatever scale it was decoded at."""
    film = Image.fromarray(np.arange(2048 * 1024, dtype=np.uint32).reshape(1024, 2048).astype("u1"))
    for decoded in (film, film.reduce(2), film.reduce(8)):
        assert content.eighth(decoded, 2048).size == (256, 128)


def test_a_film_the_index_refuses_is_never_decoded_for_its_content(tmp_path, monkeypatch):
    read = []
    monkeypatch.setattr(hash_films, "content_problem", lambda grey, width: read.append(width))
    small = _jpeg(np.zeros((100, 100)))
    films = {"00011": (small, voc("00011")), "00021": (film_bytes(2), voc("00021"))}
    fates = _film_fates(tmp_path, films)
    assert fates["00011"][1].startswith("film too small") and len(read) == 1  # 00021's only


def test_an_augmented_copy_is_dropped_by_its_name_and_never_decoded(tmp_path):
    """The originals step drops a copy named as one before any film is decoded: a blank copy
    is an augmented copy, not a film rejected for its content."""
    blank = _jpeg(np.zeros(EMPTY))
    fates = _film_fates(
        tmp_path, {"00011": (film_bytes(1), voc("00011")), "00012": (blank, voc("00012"))}
    )
    assert fates["00011"] == (Fate.pending, "")
    assert fates["00012"][0] is Fate.dropped and "augmented copy" in fates["00012"][1]


def test_a_changed_content_check_hashes_every_film_again(tmp_path, monkeypatch):
    """The hash cache is stamped with the content check's version: a film cached under
    another check is read again, never let through by a hash remembered before."""
    root = write_source(tmp_path / "source", {"00011": (film_bytes(1), voc("00011"))})
    cache = tmp_path / "hashes.parquet"
    records = drop_augmented_by_name(index_source(root, map=LocalMap(1)))
    hash_films.hash_films(root, records, map=LocalMap(1), cache_path=cache)
    monkeypatch.setattr(hash_films, "CONTENT_CHECK_VERSION", "a stricter check")
    monkeypatch.setattr(hash_films, "content_problem", lambda grey, width: "too dull")
    settled, hashes = hash_films.hash_films(root, records, map=LocalMap(1), cache_path=cache)
    [film] = [r for r in settled if r.kind is Kind.image]
    assert (film.fate, film.reason, len(hashes)) == (Fate.rejected, "too dull", 0)
