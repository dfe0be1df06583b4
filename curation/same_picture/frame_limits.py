"""The frame check's limits, each a field of a typed gate: what is measured, how, and the
limits a copy under another frame must meet. Margins: docs/margins.md, "Frame check"."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class FeatureGate:
    """Gate 1, the features agree. Margins: docs/margins.md, "Frame check".

    Inliers are counted per whole frame the two films share (``required_inliers``): a copy's
    inliers are bounded by the features each film has in the part they share (a crop to 60 %
    of each side keeps 36 % of its original's, at another scale), and a chance fit between
    distinct films finds fewer inliers in a smaller part too."""

    # inliers per whole frame shared (features-v3; chosen on the even half: distinct <= 60,
    # crops to 55-60 % of each side >= 267; held out: distinct <= 52, crops >= 138)
    min_inliers: int = 120
    min_inlier_share: float = 0.45  # of the matches (distinct <= 0.400, copies >= 0.558)

    def required_inliers(self, kept: float, min_overlap: float) -> float:
        """The inliers a pair must have when the smaller of its two overlap shares is
        ``kept``: ``min_inliers`` per whole frame shared, the overlap counted as at least
        ``min_overlap`` (the frame gate refuses a smaller one anyway)."""
        return self.min_inliers * max(kept, min_overlap)


@dataclass(frozen=True)
class FrameGate:
    """Gate 2, framed as a copy is framed: rules of how scripts reframe, not a measure of
    content. Margins: docs/margins.md, "Frame check"."""

    # A crop keeping at least half of each side of its film (a quarter of its area) is a
    # copy; what is cut further is no longer the same picture, and the audit names such a
    # pair (docs/design.md, "Same picture under another frame").
    min_kept_side: float = 0.5
    contained: float = 0.99  # an unturned copy's frame holds the other's (or lies in it)
    turned: float = 0.5  # degrees from which a copy is "rotated"
    max_turn: float = 10.0  # degrees: larger turns are quarter turns or other pictures
    max_scale_change: float = 0.25  # the two axes' scales differ by at most this
    rigid_scale: float = 0.004  # a crop, a pad, a turn keeps its scale (copies: <= 0.0026)
    unturned: float = 0.1  # degrees: a resize turns nothing (unturned copies: <= 0.076)

    @property
    def min_overlap(self) -> float:
        """Share of either film the overlap must cover."""
        return self.min_kept_side**2


@dataclass(frozen=True)
class AlignedGate:
    """Gate 3, the pixels agree once aligned: how they are compared, and the limits.
    Margins: docs/margins.md, "Frame check"."""

    compare_side: int = 512  # longest side of film A at which the aligned films are compared
    # pixels at compare_side: the spread of the local tone normalisation's window
    # (``window_blur``: a tent of that standard deviation)
    tone_sigma: float = 8.0
    edge: int = 4  # pixels left out along the overlap's edge (interpolation, borders)
    # pixels at compare_side: the tiles whose shifts refine the alignment and, what the
    # refinement leaves of them, the tile shift (every tile; every half tile when too few)
    tile: int = 64
    shift_percentile: int = 50  # the median tile's shift
    tile_percentile: int = 95  # the worst tiles' difference, but for a few (a label, a blemish)
    anatomy_blur: float = 2.0  # pixels at compare_side: grain and fine texture blurred away
    # pixels at compare_side: the anatomy's local normalisation window (applied at half
    # compare_side, as anatomy_sigma / 2: ``anatomy_correlation``)
    anatomy_sigma: float = 24.0
    aligned_limit: float = 0.5  # worst-tile difference of the normalised films (copies <= 0.299)
    shift_limit: float = 0.9  # pixels at compare_side, median tile's shift (copies <= 0.502)
    # At the anatomy's scale (real copies >= 0.8931: CLAHE clip 4 on archive-sized films; no
    # distinct real pair reaches the pixels: docs/design.md).
    min_anatomy_correlation: float = 0.8
    min_compared_share: float = 0.1  # of the frame, else the pixels say nothing
    min_tile_cover: float = 0.9  # share of a tile inside the compared area for its shift
    min_phase_response: float = 0.1  # a tile's phase correlation peak, else no shift is read
    min_shifted_tiles: int = 4  # tiles with a shift, else the shift is not measured
    whole_block: float = 0.999  # share of a halved pixel's block inside, for the anatomy


@dataclass(frozen=True)
class FrameKindLimits:
    """What a confirmed copy is called (``frame_kind``); they name the kind in the manifest
    and decide nothing about dropping it. Their margin is not measured; the sample's planted
    crops and pads (``curation.drawing.reframe``) are named by them
    (``tests/chain/test_planted_cases.py``; docs/margins.md, "Frame check")."""

    full_overlap: float = 0.97  # below this share of a film's frame, it was cropped or padded
    same_scale: float = 0.02  # a scale departing from 1 by more is a rescale


FEATURES = FeatureGate()
FRAMING = FrameGate()
ALIGNED = AlignedGate()
KINDS = FrameKindLimits()


def frame_check_version(*gates: FeatureGate | FrameGate | AlignedGate) -> str:
    """The cache's version: every field of the gates that decide what is measured and kept,
    after the version of how it is measured (v5: aligned from the tiles' phase correlation,
    windows by stack blur; v6: the tile shift from the alignment's own readings)."""
    return "frame-v6/" + "/".join(
        "-".join(f"{name}{value}" for name, value in asdict(gate).items()) for gate in gates
    )
