"""The comparison grid's arithmetic: cells by integer sums and the draft scale.

Each is hand-written for speed in place of a library call, so each is checked against that
call (Pillow's BOX resize, Pillow's draft) over sizes the real archive may hold, odd ones too.
"""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from curation.same_picture import pixels
from curation.same_picture.pixels import box_cells, draft_scale

SIZES = [(2043, 1090), (2048, 1024), (2940, 1435), (1999, 1001), (256, 128), (300, 140)]


def _pillow_box(grey: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    return np.asarray(Image.fromarray(grey).convert("F").resize(size, Image.Resampling.BOX))


@pytest.mark.parametrize("width,height", [*SIZES, (1090, 2043), (100, 60), (4100, 130)])
def test_cells_are_pillows_box_resize_for_any_film_size(width, height):
    """Landscape, portrait, sides not a multiple of the grid, and sides smaller than the grid
    (which Pillow enlarges: the sums step aside) all give Pillow's cells to its float32
    rounding; an edge one pixel off moves cells of random pixels by whole grey levels."""
    grey = np.random.default_rng(width * height).integers(0, 256, (height, width), np.uint8)
    for size in ((256, 128), (128, 256)):
        assert np.abs(box_cells(grey, size) - _pillow_box(grey, size)).max() <= 2e-5


def test_film_sized_grids_are_summed_not_handed_to_pillow(monkeypatch):
    """The sums cover every side at least as long as the grid (the fallback is for enlarged
    sides only), so a film's cells never pay for Pillow's float resize."""

    def refuse(*args, **kwargs):
        raise AssertionError("Pillow was asked to resize a film-sized grid")

    monkeypatch.setattr(pixels.Image, "fromarray", refuse)
    for width, height in SIZES:
        grey = np.random.default_rng(width).integers(0, 256, (height, width), np.uint8)
        for size in ((256, 128), (128, 256)):
            if width >= size[0] and height >= size[1]:
                box_cells(grey, size)


def test_tall_bands_do_not_overflow():
    """A band of more rows than 16 bits can sum is summed in 32 bits."""
    white = np.full((128 * 300, 300), 255, np.uint8)
    assert np.array_equal(box_cells(white, (256, 128)), np.full((128, 256), 255.0))


def test_cells_of_whole_blocks_are_their_exact_means():
    """Where every cell is a whole block, a cell is that block's exact mean."""
    grey = np.random.default_rng(7).integers(0, 256, (128 * 9, 256 * 8), np.uint8)
    exact = grey.reshape(128, 9, 256, 8).mean(axis=(1, 3))
    assert np.array_equal(box_cells(grey, (256, 128)), exact)


@pytest.mark.parametrize("request_size", [(512, 256), (256, 128)])
def test_draft_scale_is_the_scale_pillow_drafts_at(request_size):
    """Around every threshold of Pillow's rule (a side twice, four and eight times the
    request, and one pixel short of it)."""
    width_request, height_request = request_size
    widths = [width_request * n + d for n in (1, 2, 4, 8) for d in (-1, 0, 7)]
    heights = [height_request * n + d for n in (1, 2, 4, 8) for d in (-1, 0)]
    for width in widths:
        for height in heights:
            buffer = io.BytesIO()
            Image.new("L", (width, height), 128).save(buffer, "JPEG")
            with Image.open(buffer) as image:
                box = image.draft("L", request_size)[1]
            assert draft_scale((width, height), request_size) == round(width / box[2])
