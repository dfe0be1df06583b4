"""The upscale reading (``curation.keeper.frame``): where an upscale, a downscale, a stretched
pair and a crop lie against its limits, and that deciding whether a film is an upscale reads
no more than it needs (no block DCT, decode or blur a pair's earlier figures already answer),
each answer the full reading's."""

from __future__ import annotations

import io
from pathlib import Path

import cv2
import numpy as np
from PIL import Image

from curation.keeper.frame import (
    UPSCALE_BEYOND_SHARE,
    UPSCALE_FIT,
    UPSCALE_LEAD,
    UPSCALE_STRETCH,
    luminance_steps,
    upscale_of,
)
from tests.keeper.keeper_films import _crop, _decoded, _jpeg, _rescaled, _smooth, _squeezed
from tests.keeper.test_keeper import _radiograph


def _reading(larger: bytes, smaller: bytes):
    with Image.open(io.BytesIO(larger)) as image:
        steps = luminance_steps(image)
    return upscale_of(_decoded(larger), _decoded(smaller), steps)


def _written(folder: Path, pairs: dict[str, tuple[bytes, bytes]]) -> dict[str, tuple[str, str]]:
    """Each named pair (larger, smaller) written into ``folder``, as its two paths."""
    paths = {}
    for name, (larger, smaller) in pairs.items():
        paths[name] = (str(folder / f"{name}-l.jpg"), str(folder / f"{name}-s.jpg"))
        Path(paths[name][0]).write_bytes(larger)
        Path(paths[name][1]).write_bytes(smaller)
    return paths


def test_the_upscale_reading_lies_on_either_side_of_its_limits():
    """On kit films: a 1.15 upscale lies within ``UPSCALE_BEYOND_SHARE``, leads by at least
    ``UPSCALE_LEAD`` and fits within ``UPSCALE_FIT``; the original over its downscale by
    1.15 at its own quality lies beyond the share, over one at quality 95 within it but
    leading by less, over its width-only resize it is stretched, and over a crop of 0.4 %
    (no rescale) it does not fit."""
    grainy = _jpeg(_smooth(7, 2.0, 0.5), 90)
    up = _reading(_rescaled(grainy, 1.15, 90), grainy)
    assert up.beyond <= UPSCALE_BEYOND_SHARE and up.lead >= UPSCALE_LEAD
    assert up.fit <= UPSCALE_FIT and up.stretch <= UPSCALE_STRETCH
    detailed = _jpeg(_smooth(7, 0.7, 1.0), 85)
    assert _reading(detailed, _rescaled(detailed, 1 / 1.15, 85)).beyond > UPSCALE_BEYOND_SHARE
    smooth = _jpeg(_smooth(7, 1.0, 1.0), 85)
    above = _reading(smooth, _rescaled(smooth, 1 / 1.15, 95))
    assert above.beyond <= UPSCALE_BEYOND_SHARE and above.lead < UPSCALE_LEAD
    narrower = _reading(grainy, _squeezed(grainy))
    assert narrower.stretch > UPSCALE_STRETCH and not narrower.upscale
    picture = _decoded(_jpeg(_radiograph(7), 90))
    crop = _jpeg(_crop(picture, 0.004), 90)
    assert _reading(_jpeg(picture, 90), crop).fit > UPSCALE_FIT
    assert not _reading(_jpeg(picture, 90), crop).upscale


def test_deciding_an_upscale_skips_the_block_dct_only_when_the_residuals_already_say_no(
    tmp_path, monkeypatch
):
    """The keeper asks only whether a film is an upscale: a pair the residuals refuse (a
    crop does not fit, a downscale at a high quality does not lead) is answered without the
    block DCT, and every answer is the full reading's."""
    from curation.keeper import frame

    grainy = _jpeg(_smooth(7, 2.0, 0.5), 90)
    smooth = _jpeg(_smooth(7, 1.0, 1.0), 85)
    picture = _decoded(_jpeg(_radiograph(7), 90))
    pairs = {
        "upscale": (_rescaled(grainy, 1.15, 90), grainy),
        "downscale above": (smooth, _rescaled(smooth, 1 / 1.15, 95)),
        "crop": (_jpeg(picture, 90), _jpeg(_crop(picture, 0.004), 90)),
    }
    paths = _written(tmp_path, pairs)
    full = {name: frame.resampling_of(*map(Path, paths[name])) for name in pairs}
    assert [full[name].upscale for name in pairs] == [True, False, False]
    assert not full["downscale above"].rescaled_alike and not full["crop"].rescaled_alike
    block_dcts = 0
    block_dct = frame._block_dct

    def counted(grey: np.ndarray) -> np.ndarray:
        nonlocal block_dcts
        block_dcts += 1
        return block_dct(grey)

    monkeypatch.setattr(frame, "_block_dct", counted)
    for name in pairs:
        assert frame.is_upscale(paths[name]) is full[name].upscale
    assert block_dcts == 1  # the upscale's one; the others were decided without it


def test_the_block_dct_is_each_jpeg_blocks_own_dct():
    """The whole-image block DCT gives, at (block row, v, block column, u), what OpenCV's
    8 x 8 DCT of that block alone gives (the larger film's JPEG grid; a partial block at
    the right and bottom edges is left out), so the upscale reading compares each block's
    own coefficients with its own quantisation steps."""
    from curation.keeper import frame

    grey = np.random.default_rng(7).uniform(-40, 40, (27, 42))
    coefficients = frame._block_dct(grey)
    assert coefficients.shape == (3, 8, 5, 8)
    for row in range(3):
        for column in range(5):
            block = grey[row * 8 : row * 8 + 8, column * 8 : column * 8 + 8]
            expected = cv2.dct(np.ascontiguousarray(block))
            assert np.allclose(coefficients[row, :, column, :], expected, atol=1e-9)


def test_deciding_decodes_no_stretched_pair_and_blurs_no_pair_the_lead_refuses(
    tmp_path, monkeypatch
):
    """Only whether a film is an upscale is wanted: a pair whose sizes are stretched is
    answered from the two headers (neither film decoded), and one whose lead already
    refuses it (a downscale written above its original's quality) without the blur behind
    ``fit``; every answer is the full reading's."""
    from curation.keeper import frame

    grainy = _jpeg(_smooth(7, 2.0, 0.5), 90)
    smooth = _jpeg(_smooth(7, 1.0, 1.0), 85)
    pairs = {
        "upscale": (_rescaled(grainy, 1.15, 90), grainy),
        "stretched": (grainy, _squeezed(grainy)),
        "downscale above": (smooth, _rescaled(smooth, 1 / 1.15, 95)),
    }
    paths = _written(tmp_path, pairs)
    full = {name: frame.resampling_of(*map(Path, paths[name])) for name in pairs}
    assert [full[name].upscale for name in pairs] == [True, False, False]
    assert full["stretched"].stretch > UPSCALE_STRETCH
    assert full["downscale above"].lead < UPSCALE_LEAD
    assert full["downscale above"].stretch <= UPSCALE_STRETCH
    read, blurs = [], 0
    resampling_of, blur = frame.resampling_of, cv2.GaussianBlur

    def reading(larger: Path, smaller: Path, deciding: bool = False) -> object:
        read.append(larger.name)
        return resampling_of(larger, smaller, deciding)

    def counted(*args: object, **kwargs: object) -> np.ndarray:
        nonlocal blurs
        blurs += 1
        return blur(*args, **kwargs)

    monkeypatch.setattr(frame, "resampling_of", reading)
    monkeypatch.setattr(frame.cv2, "GaussianBlur", counted)
    for name in pairs:
        assert frame.is_upscale(paths[name]) is full[name].upscale
    assert read == ["upscale-l.jpg", "downscale above-l.jpg"]  # the stretched pair: headers
    assert blurs == 1  # the upscale's; the downscale's lead said no before it
