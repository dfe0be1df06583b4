"""``bench.same_picture.decodes`` counts each image decode once, charged to the toolkit function
that made it: a simplejpeg decode and a Pillow decode each count, a second load of an image
already decoded does not, and nothing is counted once the count is over."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import simplejpeg
from PIL import Image

from bench.same_picture.decodes import counting_decodes
from curation.features.features import working_grey
from curation.keeper.evidence import header_and_border


def _film(path: Path) -> Path:
    noise = np.random.default_rng(0).integers(0, 256, (48, 96), dtype=np.uint8)
    Image.fromarray(noise).save(path, quality=90)
    return path


def test_each_decode_counts_once_by_the_toolkit_function_that_made_it(tmp_path: Path) -> None:
    film = _film(tmp_path / "film.jpg")
    with counting_decodes() as counted:
        working_grey(film.read_bytes())  # simplejpeg
        header_and_border(film)  # Pillow, at draft scale
    assert dict(counted) == {
        "curation.features.features:working_grey": 1,
        "curation.keeper.evidence:header_and_border": 1,
    }


def test_a_loaded_image_loaded_again_is_not_decoded_again(tmp_path: Path) -> None:
    film = _film(tmp_path / "film.jpg")
    with counting_decodes() as counted, Image.open(film) as image:
        image.load()
        image.load()
    assert dict(counted) == {"outside the toolkit": 1}


def test_nothing_is_counted_after_the_count(tmp_path: Path) -> None:
    film = _film(tmp_path / "film.jpg")
    with counting_decodes() as counted:
        pass
    simplejpeg.decode_jpeg(film.read_bytes())
    with Image.open(film) as image:
        image.load()
    assert not counted
