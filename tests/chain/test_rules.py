"""The chain's rule values, each pinned on its boundary: a case just inside and one just outside,
so that moving a value a small step either way, or turning the comparison that applies it
(``<=`` into ``<``), fails here.

The values are written here as numbers, each with where it was decided, and are not read
from the constants: a boundary built from the constant moves with it and could never fail.
Changing a rule is a deliberate edit in three places: the constant, its version string where
results are cached under one, and this file. The small-split cap is pinned in
``tests/splits/test_assign.py``, the keeper's order of evidence in
``tests/keeper/test_keeper_rules.py`` (``test_each_rule_outranks_the_next``).
"""

from __future__ import annotations

import math
from dataclasses import fields, replace

import numpy as np
import pytest

from curation.chain.settings import Settings
from curation.features.features import FeatureMatch
from curation.hashes.hashing import View
from curation.keeper.reencode import written_from
from curation.lookalikes import LookalikeConfig
from curation.lookalikes.components import lookalike_links, patient_links
from curation.same_picture import SamePictureConfig, frame_check
from curation.same_picture.candidates import candidate_pairs, confirm_component
from curation.same_picture.frame_check import (
    FrameComparison,
    frame_kind,
    plausible,
    turn_and_scale,
    without_pixels,
)
from curation.same_picture.pixels import Comparison, compare
from curation.visits.verification import VisitEvidence
from support import film_kit as kit

# --- hash radii: same-picture candidates and look-alike links ----------------------------------

# Bits of 512 (docs/design.md: copies reach 16 bits on real films, the nearest distinct films
# 47 on real films and 50 on the sample).
SAME_PICTURE_RADIUS = 32
LOOKALIKE_DISTANCE = 30  # bits of 512, fixed by the mission: a pair at 30 is linked, 31 is not


def _codes(radius: int) -> dict[str, dict[View, bytes]]:
    """Films whose hashes sit at ``radius`` and ``radius + 1`` bits from film "a", upright
    ("in", "out") and turned ("turned in", "turned out"): every other pair is ~256 bits
    apart (random codes; the flipped bits of each film are disjoint)."""
    rng = np.random.default_rng(24)
    hashes = {
        film: {view: rng.integers(0, 256, 64, dtype=np.uint8).tobytes() for view in View}
        for film in ("a", "in", "out", "turned in", "turned out")
    }
    base = np.unpackbits(np.frombuffer(hashes["a"][View.identity], np.uint8))

    def flipped(start: int, bits: int) -> bytes:
        code = base.copy()
        code[start : start + bits] ^= 1
        return np.packbits(code).tobytes()

    hashes["in"][View.identity] = flipped(0, radius)
    hashes["out"][View.identity] = flipped(100, radius + 1)
    hashes["turned in"][View.rot90] = flipped(200, radius)
    hashes["turned out"][View.mirror] = flipped(300, radius + 1)
    return hashes


def test_same_picture_candidates_of_a_default_run_reach_32_bits_and_stop_there():
    radius = Settings().of(SamePictureConfig).same_picture_distance
    found = candidate_pairs(_codes(SAME_PICTURE_RADIUS), radius)
    assert found == [
        ("a", "in", View.identity, SAME_PICTURE_RADIUS),
        ("turned in", "a", View.rot90, SAME_PICTURE_RADIUS),
    ]


def test_look_alikes_of_a_default_run_are_linked_at_30_bits_and_not_at_31():
    hashes = _codes(LOOKALIKE_DISTANCE)
    expected = [
        ("a", "in", View.identity, LOOKALIKE_DISTANCE),
        ("a", "turned in", View.rot90, LOOKALIKE_DISTANCE),
    ]
    for links in (
        lookalike_links(hashes, Settings().of(LookalikeConfig).lookalike_distance),
        lookalike_links(hashes),
    ):
        assert [(x.first, x.second, x.view, x.distance) for x in links] == expected


MAX_FILMS_PER_PATIENT = (
    12  # films: more naming one number is a template (curation/lookalikes/components.py)
)


def test_twelve_films_naming_one_patient_are_linked_and_thirteen_are_a_template():
    def naming(films: int) -> dict[str, str]:
        return {f"{i:05d}": "PN7" for i in range(films)}

    links, templated = patient_links(naming(MAX_FILMS_PER_PATIENT))
    assert (len(links), templated) == (MAX_FILMS_PER_PATIENT - 1, 0)
    links, templated = patient_links(naming(MAX_FILMS_PER_PATIENT + 1))
    assert (links, templated) == ([], MAX_FILMS_PER_PATIENT + 1)


# --- the pixel check ----------------------------------------------------------------------------

# Grey levels (docs/design.md: the largest copy 0.290, the closest distinct film 1.136).
SAME_PICTURE_LIMIT = 0.65
STEP = 1e-4  # a dropped film's difference is recorded to 4 decimals


def test_the_pixel_check_confirms_a_difference_of_0_65_and_not_one_just_over():
    candidates = [("a", "at", View.identity, 3), ("a", "over", View.identity, 4)]
    differences = {"at": SAME_PICTURE_LIMIT, "over": SAME_PICTURE_LIMIT + STEP}
    pairs, _ = confirm_component(
        candidates, lambda a, b, view: Comparison(differences[b], None, True)
    )
    assert [(p.a, p.b) for p in pairs] == [("a", "at")]


MAX_ASPECT_CHANGE = 0.05  # a pair whose shapes differ more is never compared in pixels


def test_pixels_are_compared_up_to_an_aspect_change_of_5_percent_and_not_past_it(tmp_path):
    """Film B 2000 x 1000 (aspect 2); film A wider in aspect by 4.995% (2102 x 1001) and by
    5.005% (2119 x 1009): a tenth of a pixel from the limit on either side."""
    b = kit.save(kit.film(7, (2000, 1000)), tmp_path / "b.jpg")
    for size, compared in (((2102, 1001), True), ((2119, 1009), False)):
        a = kit.save(kit.film(7, size), tmp_path / f"a{size[0]}.jpg")
        change = (size[0] / size[1] - 2) / 2
        assert abs(change - MAX_ASPECT_CHANGE) < 0.0001
        assert (change <= MAX_ASPECT_CHANGE) is compared
        result = compare(a, b, View.identity, (size, (2000, 1000)))
        assert (result.exposure is not None) is compared, (size, result)


# --- the frame check: gates of a same picture under another frame ------------------------------

# Each limit with its side (bench/RESULTS.md, python -m bench.same_picture.frames on real films).
FRAME_LIMITS = {
    "inliers": 120,  # at least, per whole frame shared (distinct <= 60, copies >= 139)
    "inlier_share": 0.45,  # at least (distinct <= 0.366, copies >= 0.887)
    "difference": 0.5,  # at most (copies <= 0.299)
    "shift": 0.9,  # at most (copies <= 0.449)
    "anatomy": 0.8,  # at least (copies >= 0.8931: CLAHE clip 4 on archive-sized real films)
    "overlap": 0.25,  # at least, of either film: a crop keeping half of each side
}
FRAME_STEP = 1e-6  # the check's figures are recorded to 6 decimals
# A copy that clears every gate by far: unturned, the same frame, the same pixels.
CLEAR = FrameComparison(1000, 0.95, (1.0, 0.0, 0.0, 0.0, 1.0, 0.0), 1.0, 1.0, 0.1, 0.1, 0.99, 1050)


def _with(field: str, value: float) -> FrameComparison:
    if field == "overlap":  # the smaller overlap decides; the other film holds this one
        return replace(CLEAR, overlap_a=1.0, overlap_b=value)
    return replace(CLEAR, **{field: int(value) if field == "inliers" else value})


@pytest.mark.parametrize("field", FRAME_LIMITS)
def test_each_frame_gate_holds_at_its_limit_and_fails_just_past_it(field):
    limit = FRAME_LIMITS[field]
    past = {"inliers": 1, "difference": -FRAME_STEP, "shift": -FRAME_STEP}.get(field, FRAME_STEP)
    assert _with(field, limit).same_picture, field
    assert not _with(field, limit - past).same_picture, field


@pytest.mark.parametrize("kept, inliers", [(1.0, 120), (0.36, 44), (0.25, 30), (0.2, 30)])
def test_the_inliers_asked_for_are_counted_per_whole_frame_shared(kept, inliers):
    """120 for a whole frame, 44 for a crop keeping 60% of each side, 30 at the smallest
    overlap the frame gate admits (and below it, which that gate refuses anyway)."""
    pair = replace(CLEAR, overlap_a=kept)
    assert replace(pair, inliers=inliers).features_agree
    assert not replace(pair, inliers=inliers - 1).features_agree


def test_too_few_inliers_or_too_small_a_share_settle_a_pair_before_its_pixels():
    def match(inliers: int, matches: int) -> FeatureMatch:
        empty = np.zeros((0, 2))
        return FeatureMatch(matches, inliers, np.array([[1.0, 0, 0], [0, 1.0, 0]]), empty, empty)

    fewest = 30  # a quarter of a whole frame's: the smallest overlap the frame gate admits
    assert without_pixels(match(fewest, fewest)) is None
    assert without_pixels(match(450, 1000)) is None
    for settled in (
        without_pixels(match(fewest - 1, fewest - 1)),
        without_pixels(match(449, 1000)),
    ):
        assert settled is not None and not settled.same_picture


def _transform(turn: float, sx: float = 1.0, sy: float = 1.0) -> np.ndarray:
    """A turn of ``turn`` degrees after scaling the axes by ``sx`` and ``sy``, nudged by a few
    units in the last place until the check reads the turn as exactly ``turn``, so that a
    limit can be tested at its value."""
    c, s = math.cos(math.radians(turn)), math.sin(math.radians(turn))
    matrix = np.array([[c * sx, -s * sy, 0.0], [s * sx, c * sy, 0.0]])
    for _ in range(100):
        measured = turn_and_scale(matrix)[0]
        if measured == turn:
            return matrix
        matrix[1, 0] = math.nextafter(matrix[1, 0], math.inf if measured < turn else -math.inf)
    raise AssertionError(f"no transform reads as a turn of exactly {turn} degrees")


# (limit, a transform just inside, one just outside): rigid (one scale) or unturned (a resize).
GEOMETRY = {
    "MAX_TURN 10 degrees": (_transform(10.0), _transform(10.001)),
    "MAX_SCALE_CHANGE 0.25 (aspect)": (_transform(0.0, 1.25), _transform(0.0, 1.2501)),
    "RIGID_SCALE 0.004 on each axis (turned 2 degrees)": (
        _transform(2.0, 1.00399, 0.99601),
        _transform(2.0, 1.0, 1.00401),
    ),
    "UNTURNED 0.1 degrees (resized 5%)": (
        _transform(0.1, 1.05, 1.05),
        _transform(0.1001, 1.05, 1.05),
    ),
}


@pytest.mark.parametrize("rule", GEOMETRY)
def test_each_geometry_limit_keeps_a_reframing_and_refuses_one_just_past_it(rule):
    inside, outside = GEOMETRY[rule]
    assert plausible(inside), rule
    assert not plausible(outside), rule


def _framed(turn: float, overlap_a: float, overlap_b: float) -> FrameComparison:
    kept = tuple(float(v) for v in _transform(turn).ravel())
    return replace(CLEAR, transform=kept, overlap_a=overlap_a, overlap_b=overlap_b)


def test_a_turn_from_half_a_degree_is_a_rotated_copy_whatever_the_frames_lose():
    """TURNED 0.5 degrees: both films lose their corners to a turn, so neither holds the other."""
    turned, straight = _framed(0.5, 0.9, 0.9), _framed(0.4999, 0.9, 0.9)
    assert turned.same_picture and frame_kind(turned) == "rotated"
    assert not straight.same_picture


def test_an_unturned_copy_needs_one_frame_holding_99_percent_of_the_other():
    """CONTAINED 0.99: a crop or a pad keeps one frame inside the other; a frame moved within
    the picture (both films losing a strip) is another shot."""
    assert _framed(0.0, 0.99, 0.8).same_picture and _framed(0.0, 0.8, 0.99).same_picture
    assert not _framed(0.0, 0.99 - FRAME_STEP, 0.8).same_picture
    assert not _framed(0.0, 0.8, 0.99 - FRAME_STEP).same_picture


def _kind(overlap_a: float, overlap_b: float, scale: float = 1.0) -> str:
    kept = tuple(float(v) for v in _transform(0.0, scale, scale).ravel())
    return frame_kind(replace(CLEAR, transform=kept, overlap_a=overlap_a, overlap_b=overlap_b))


def test_an_unturned_copy_is_named_cropped_padded_or_rescaled_past_its_kind_limits():
    """FrameKindLimits: A's frame covered below 0.97, B is cropped; B's, padded; a scale off 1
    by more than 0.02, rescaled; otherwise only the tone differs (the manifest's kind)."""
    assert _kind(0.97, 0.97) == "re-toned"
    assert _kind(0.97 - FRAME_STEP, 1.0) == "cropped"
    assert _kind(1.0, 0.97 - FRAME_STEP) == "padded"
    assert _kind(1.0, 1.0, 1.0199) == "re-toned"
    assert _kind(1.0, 1.0, 1.0201) == "rescaled"
    assert _kind(1.0, 1.0, 0.9801) == "re-toned"
    assert _kind(1.0, 1.0, 0.9799) == "rescaled"


def test_the_frame_cache_version_moves_with_every_field_of_the_gates():
    """A cached comparison is stale once any setting that decides what is measured moves:
    the version is made from every field of the three gates, none left out by hand."""
    gates = (frame_check.FEATURES, frame_check.FRAMING, frame_check.ALIGNED)
    recorded = frame_check.frame_check_version(*gates)
    assert recorded == frame_check.FRAME_CHECK_VERSION
    for n, gate in enumerate(gates):
        for field in fields(gate):
            moved = replace(gate, **{field.name: getattr(gate, field.name) * 2 + 1})
            version = frame_check.frame_check_version(*gates[:n], moved, *gates[n + 1 :])
            assert version != recorded, field.name


# --- visits of one patient --------------------------------------------------------------------

VISIT_CELLS = 22  # at least (curation/visits/verification.py: the margin in docs/design.md)


def test_a_visit_is_verified_at_its_number_of_grid_cells_and_not_below():
    def evidence(cells: int) -> VisitEvidence:
        empty = np.zeros((0, 2))
        return VisitEvidence(500, 400, cells, empty, empty)

    assert evidence(VISIT_CELLS).verified and not evidence(VISIT_CELLS - 1).verified


@pytest.mark.parametrize(
    ("misses", "copy"),
    [
        ((0.015, 0.2), "b"),  # the copy re-encoded from its source to 1.5% of its pixels
        ((0.0151, 0.2), None),  # just past: silent
        ((0.001, 0.0101), "b"),  # ten times fewer misses than the other way
        ((0.001, 0.0099), None),  # not quite ten times: silent
        ((0.2, 0.0), "a"),  # the other way round
        ((0.0, 0.0), None),  # each is the other re-encoded: nothing to tell
    ],
)
def test_a_reencoding_names_a_copy_at_1_5_percent_and_ten_times_fewer_misses(misses, copy):
    found = written_from("a", "b", misses)
    assert found == (None if copy is None else (copy, "ab".replace(copy, "")))
