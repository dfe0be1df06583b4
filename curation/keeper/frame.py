"""What two films' frames say about which one is the original (``curation.keeper.rules``'s
``padded``, ``upscaled``, ``re-saved in colour`` and ``filled corners`` rules).

- **Padding is read from the pair, not from one film.** Many exported radiographs carry a
  constant dark border of their own (about 1 % wide), which a re-encoded, re-toned or cropped
  copy keeps, brightens or cuts away. A pad is a border added *after* the exposure: the
  padded film is larger than its partner, its constant border is wider than the partner's on
  some side by ``PAD_MIN_SHARE`` of the frame, and the picture inside its border is no more
  than the partner's (``CONTENT_TOLERANCE``): had it shown picture the partner lacks, the
  partner would be a crop and the border the film's own. Two films of one size share their
  frame: neither is a pad of the other.
- **Black corners inside the film's own border**: a rotation by a few degrees fills all
  four corners of the frame with black triangles; a film's own straight border is not such
  a fill, so the corners are measured inside the constant border lines, and a film's own
  dark corners (the dark below a jaw reaching the bottom corners, which a brightened copy
  lifts) are not either, so the fill is read in the least black of the four corners.
- **A grey picture stored in three equal channels** is a re-save where the archive's films
  are stored grey: an imaging system writes a grey film in one channel.
- **An upscale adds no detail**: the larger film of a pair of two sizes is its smaller
  partner upscaled when, on the larger film's own JPEG block grid, its DCT coefficients are
  the partner's upscaled ones moved by no more than its own quantisation (half a step): an
  upscale re-encoded at any quality keeps to that, while an original's detail beyond its
  downscale's resolution moves many coefficients further (``upscale_of``). Residuals in
  grey levels do not separate the two at archive size: a film whose fine texture is mostly
  its own JPEG noise leaves an upscale re-encoded at a lower quality as far from its source
  as the original is from its downscale.

The limits and the measurements behind them: docs/design.md, "Same picture, on real sizes and
exposures", and ``bench/keeper/keeper.json`` (``python -m bench.keeper.bordered``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

import cv2
import numpy as np
from PIL import Image

PAD_TOLERANCE = 8  # grey levels a "constant" border line may vary by (JPEG ringing)
PAD_MIN_SHARE = 0.015  # of the side: a pad's border is wider than the partner's by this much
PAD_REREAD_SHARE = 0.005  # from this extra border (draft decode) the pair is read at full size
CONTENT_TOLERANCE = 0.025  # of the side: the picture inside a pad's border is the partner's
CORNER_MIN_SHARE = 0.045  # black share of the least black corner block inside the border
GREY_CHANNELS = 2  # grey levels the channels of a grey picture stored in colour may differ by
UPSCALE_BEYOND_SHARE = 0.027  # of the larger film's AC coefficients (see ``upscale_of``)
UPSCALE_STRETCH = 0.01  # an upscale scales both sides alike, but for each side's rounding
UPSCALE_LEAD = -0.27  # log2 ratio of the two resampling residuals (see ``upscale_of``)
UPSCALE_FIT = 1.1  # an upscale's residual over the film's own fine detail, at most

Borders = tuple[float, float, float, float]  # constant border width: left, top, right, bottom


@dataclass(frozen=True)
class Frame:
    """A film's size and its constant border on each side (as shares of that side)."""

    width: int
    height: int
    borders: Borders = (0.0, 0.0, 0.0, 0.0)

    def content(self) -> tuple[float, float]:
        """The picture inside the constant border, in pixels."""
        left, top, right, bottom = self.borders
        return self.width * (1 - left - right), self.height * (1 - top - bottom)


def border_runs(grey: np.ndarray) -> tuple[int, int, int, int]:
    """How many lines at each border (left, top, right, bottom) are one constant black or
    white level, counted inwards."""
    grey = grey.astype(np.int16)
    runs = []
    for lines in (grey.T, grey, grey.T[::-1], grey[::-1]):
        low, high = lines.min(axis=1), lines.max(axis=1)
        flat = (high - low <= PAD_TOLERANCE) & (
            (high <= PAD_TOLERANCE) | (low >= 255 - PAD_TOLERANCE)
        )
        runs.append(int(np.argmin(flat)) if not flat.all() else len(flat))
    left, top, right, bottom = runs
    return left, top, right, bottom


def border_shares(grey: np.ndarray) -> Borders:
    """The constant border on each side as a share of that side."""
    height, width = grey.shape
    left, top, right, bottom = border_runs(grey)
    return (
        round(left / width, 4),
        round(top / height, 4),
        round(right / width, 4),
        round(bottom / height, 4),
    )


def content_ratio(film: Frame, other: Frame) -> float:
    """How much more picture ``film`` shows inside its border than ``other`` does (the larger
    ratio of the two sides' content, in pixels)."""
    (own_w, own_h), (other_w, other_h) = film.content(), other.content()
    return max(own_w / max(other_w, 1.0), own_h / max(other_h, 1.0))


def pad_share(film: Frame, other: Frame, minimum: float = PAD_MIN_SHARE) -> float:
    """How wide a pad ``film`` carries over ``other`` (a share of its side); 0 when its
    border is not a pad of ``other``'s picture (module docstring)."""
    if film.width * film.height <= other.width * other.height:
        return 0.0
    if content_ratio(film, other) > 1 + CONTENT_TOLERANCE:
        return 0.0  # it shows picture the other lacks: the other is a crop
    extra = max(mine - theirs for mine, theirs in zip(film.borders, other.borders, strict=True))
    return round(extra, 4) if extra >= minimum else 0.0


def near_pad(film: Frame, other: Frame) -> bool:
    """Whether the draft decode reads ``film``'s border as wider than ``other``'s by at least
    ``PAD_REREAD_SHARE`` but less than a pad: a pad a few draft pixels wide loses one to the
    JPEG's ringing at 1/8 scale, so the pair's borders are read again at full size."""
    return PAD_REREAD_SHARE <= pad_share(film, other, 0.0) < PAD_MIN_SHARE


def full_size_borders(path: Path) -> Borders:
    """A film's constant borders read on its full decode; none for a film that no longer
    reads."""
    grey = _grey(path)
    return (0.0, 0.0, 0.0, 0.0) if grey is None else border_shares(grey)


def corner_share(grey: np.ndarray, minimum: float = CORNER_MIN_SHARE) -> float:
    """The black share of the least black of the four corner blocks inside the film's
    constant border (a sixteenth of the short side each): a rotation fills all four; 0
    below ``minimum``."""
    left, top, right, bottom = border_runs(grey)
    inside = grey[top : grey.shape[0] - bottom, left : grey.shape[1] - right]
    if min(inside.shape) < 4:
        return 0.0
    side = max(4, min(inside.shape) // 16)
    blocks = (
        inside[:side, :side],
        inside[:side, -side:],
        inside[-side:, :side],
        inside[-side:, -side:],
    )
    share = float(min((block <= PAD_TOLERANCE).mean() for block in blocks))
    return round(share, 3) if share >= minimum else 0.0


def channel_spread(picture: np.ndarray) -> float:
    """How far apart a decoded colour picture's channels lie (grey levels, at the 99.9th
    percentile of its pixels); 255 for a picture stored in one channel."""
    if picture.ndim != 3 or picture.shape[2] != 3:
        return 255.0
    channels = picture.astype(np.int16)
    return float(np.percentile(channels.max(axis=2) - channels.min(axis=2), 99.9))


def grey_in_colour(picture: np.ndarray) -> bool:
    """Whether a decoded picture has three channels that all show one grey picture."""
    return channel_spread(picture) <= GREY_CHANNELS


@dataclass(frozen=True)
class Resampling:
    """How a larger grey film relates to a smaller one of the same picture (``upscale_of``)."""

    beyond: float  # share of its AC coefficients off the smaller upscaled by over half a step
    lead: float  # log2 of (smaller vs larger downscaled) over (larger vs smaller upscaled)
    fit: float  # larger vs smaller upscaled, over the larger film's own fine detail
    stretch: float  # how far the two sides' scales differ (their ratio, less one)

    @property
    def upscale(self) -> bool:
        """The larger film is the smaller one upscaled: it holds nothing the smaller one
        lacks (``UPSCALE_BEYOND_SHARE``), the smaller one is not rather the larger one
        downscaled (``UPSCALE_LEAD``), and the two are aligned as a rescale
        (``UPSCALE_FIT``: a crop of a few per cent is not) of both sides alike
        (``UPSCALE_STRETCH``: a film squeezed in one direction lost detail in that one
        only, too little to show in the share)."""
        return self.beyond <= UPSCALE_BEYOND_SHARE and self.rescaled_alike

    @property
    def rescaled_alike(self) -> bool:
        """What the residuals say alone (``lead``, ``fit`` and ``stretch`` within their
        limits): without it no ``beyond`` makes an upscale."""
        return (
            self.lead >= UPSCALE_LEAD
            and self.fit <= UPSCALE_FIT
            and self.stretch <= UPSCALE_STRETCH
        )


def _block_dct(grey: np.ndarray) -> np.ndarray:
    """The orthonormal 8 x 8 DCT of each whole block on the JPEG grid (JPEG's own scaling),
    as (block rows, vertical frequency, block columns, horizontal frequency): two matrix
    products over the whole image, not one pair of 8 x 8 products a block."""
    rows, columns = grey.shape[0] // 8, grey.shape[1] // 8
    strips = grey[: rows * 8, : columns * 8].reshape(rows, 8, columns * 8)
    basis = _DCT.astype(grey.dtype, copy=False)  # in the image's own precision
    vertical = np.matmul(basis, strips)  # each block's columns transformed
    coefficients: np.ndarray = (vertical.reshape(-1, 8) @ basis.T).reshape(rows, 8, columns, 8)
    return coefficients


def _dct_basis() -> np.ndarray:
    """The 8-point orthonormal DCT-II basis, one frequency a row."""
    frequency, position = np.mgrid[0:8, 0:8]
    basis: np.ndarray = np.sqrt(2 / 8) * np.cos((2 * position + 1) * frequency * np.pi / 16)
    basis[0] /= np.sqrt(2)
    return basis


_DCT = _dct_basis()


def upscale_of(
    larger: np.ndarray,
    smaller: np.ndarray,
    steps: np.ndarray | None = None,
    deciding: bool = False,
) -> Resampling:
    """Whether the larger grey film holds more than the smaller one upscaled (bicubic).

    ``beyond`` is the share of the larger film's AC DCT coefficients, on its JPEG block
    grid, that lie further from the upscaled smaller film's than half their quantisation
    step (``steps``, the larger film's luminance table, 8 x 8; one grey level where it has
    none) plus one level of rounding: an upscale's coefficients moved only by its own
    encoding, while an original's own detail, and the encoding noise its downscale gained
    when written, move them further. A downscale written at a much higher quality than its
    original gains too little noise for that; ``lead`` then tells: the log2 ratio of the
    smaller film's residual against the larger one downscaled (area) to the larger one's
    against the smaller one upscaled, in grey levels. Both read inside a margin of 2 %
    (the resampling's edges); ``fit`` is that residual against the film's own fine detail
    (its difference from its blur), which tells a rescale from a crop; ``stretch`` how far
    the two sides' scales differ. ``deciding``: only whether it is an upscale is wanted, so
    what the answer no longer needs is left unmeasured (infinite): ``fit`` (a blur of the
    larger film) when the lead or the stretch already says no, ``beyond`` (a block DCT on
    the larger film's grid) when the residuals do (``rescaled_alike``)."""
    height, width = larger.shape
    # Single precision, means summed in double: in about half the time, the real films'
    # readings (bench.keeper.bordered, bench.peers.real's folders) came out the same to
    # their 4 decimals, bar two ``fit`` figures far above its limit that moved by 0.0001.
    big = larger.astype(np.float32)
    small = smaller.astype(np.float32)
    up = cv2.resize(small, (width, height), interpolation=cv2.INTER_CUBIC)
    down = cv2.resize(big, (small.shape[1], small.shape[0]), interpolation=cv2.INTER_AREA)
    edge = max(1, round(0.02 * min(height, width)))
    added = big - up  # what the larger film holds beyond the smaller one upscaled
    missed_up = float(np.abs(added)[edge:-edge, edge:-edge].mean(dtype=np.float64))
    missed_down = float(np.abs(small - down).mean(dtype=np.float64))
    lead = np.log2(max(missed_down, 1e-6) / max(missed_up, 1e-6))
    stretch = stretch_of((width, height), (small.shape[1], small.shape[0]))
    unfitted = Resampling(math.inf, round(float(lead), 4), 0.0, stretch)  # fit not yet read
    if deciding and not unfitted.rescaled_alike:  # the lead or the stretch already says no
        return replace(unfitted, fit=math.inf)
    detail = float(np.abs(big - cv2.GaussianBlur(big, (0, 0), 2.0)).mean(dtype=np.float64))
    residuals = replace(unfitted, fit=round(missed_up / max(detail, 1e-6), 4))
    if deciding and not residuals.rescaled_alike:
        return residuals
    limit = (np.ones((8, 8)) if steps is None else steps.astype(np.float64)) / 2 + 1
    limit[0, 0] = math.inf  # the AC coefficients only
    margin = -(-edge // 8)  # whole blocks
    # The DCT is linear: the coefficients' move is the DCT of the pixels' difference.
    moved = np.abs(_block_dct(added))[margin:-margin, :, margin:-margin, :]
    blocks = moved.shape[0] * moved.shape[2]
    beyond = np.count_nonzero(moved > limit[None, :, None, :]) / (63 * blocks) if blocks else 1.0
    return replace(residuals, beyond=round(float(beyond), 4))


def luminance_steps(image: Image.Image) -> np.ndarray | None:
    """A JPEG's luminance quantisation table as 8 x 8 steps (Pillow gives it in natural
    order); ``None`` for a file without one."""
    tables = getattr(image, "quantization", None)
    if not tables:
        return None
    return np.asarray(tables[min(tables)], dtype=np.float64).reshape(8, 8)


def stretch_of(larger: tuple[int, int], smaller: tuple[int, int]) -> float:
    """How far the two sides' scales from the ``smaller`` (width, height) to the ``larger``
    differ: their ratio, less one."""
    (width, height), (small_width, small_height) = larger, smaller
    return round(abs((width / small_width) / (height / small_height) - 1), 4)


def resampling_of(larger: Path, smaller: Path, deciding: bool = False) -> Resampling | None:
    """``upscale_of`` read from two files (the larger film's own quantisation table); ``None``
    when one no longer reads."""
    try:
        with Image.open(larger) as image:
            steps = luminance_steps(image)
            big = np.asarray(image.convert("L"))
    except (OSError, ValueError, Image.DecompressionBombError):
        return None
    small = _grey(smaller)
    return None if small is None else upscale_of(big, small, steps, deciding)


def _grey(path: Path) -> np.ndarray | None:
    try:
        with Image.open(path) as image:
            return np.asarray(image.convert("L"))
    except (OSError, ValueError, Image.DecompressionBombError):
        return None


def is_upscale(paths: tuple[str, str]) -> bool:
    """Whether the film at the first path is an upscale of the one at the second (worker
    side); ``False`` when one no longer reads. Two films whose sizes are stretched
    (``UPSCALE_STRETCH``) are answered from their headers: no upscale, and nothing decoded."""
    larger, smaller = Path(paths[0]), Path(paths[1])
    sizes = _size(larger), _size(smaller)
    if sizes[0] and sizes[1] and stretch_of(sizes[0], sizes[1]) > UPSCALE_STRETCH:
        return False
    reading = resampling_of(larger, smaller, deciding=True)
    return reading is not None and reading.upscale


def _size(path: Path) -> tuple[int, int] | None:
    """A film's (width, height) from its header; ``None`` when it no longer opens."""
    try:
        with Image.open(path) as image:
            return image.size
    except (OSError, ValueError, Image.DecompressionBombError):
        return None
