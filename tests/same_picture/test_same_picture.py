"""Same-picture detection at real film sizes and exposures, and the margins of its limits.

The films come from ``support/film_kit.py`` (drawn without the code under test) at sizes from
the real archive's range; copies are made as a script or a re-export would make them.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from curation.core.parallel import ordered_map
from curation.core.vocabulary import SAME_PICTURE_RADIUS
from curation.hashes.hashing import AverageHash512, View, hamming
from curation.keeper.groups import same_picture_groups
from curation.keeper.rules import FilmFacts
from curation.same_picture import pixels
from curation.same_picture.candidates import (
    SamePicture,
    candidate_components,
    candidate_pairs,
    confirm_component,
)
from curation.same_picture.detect import ComponentJob, confirm_job
from curation.same_picture.pixel_cache import ComparisonCache
from curation.same_picture.pixels import SAME_PICTURE_LIMIT, Comparison, compare
from support import film_kit as kit
from support.same_picture_cases import COPIES, DISTINCT, SEEDS, make_case

# Issue 11's measurement on real panoramic films: distinct films were at least 61 bits apart
# and augmented copies up to 16 bits in their best orientation.
REAL_DISTINCT_MIN_BITS = 61
REAL_COPY_MAX_BITS = 16
MARGIN = 0.25


@pytest.fixture(scope="module")
def kit_films(tmp_path_factory) -> dict[tuple[int, str], Path]:
    """For each seed: the original (``""``) and one file per copy or distinct case."""
    folder = tmp_path_factory.mktemp("kit")
    paths = {}
    for seed in SEEDS:
        picture = kit.film(seed)
        paths[(seed, "")] = kit.save(picture, folder / f"{seed}.jpg", 92)
        for how in [h for h, _ in COPIES.values()] + list(DISTINCT.values()):
            made, quality = make_case(picture, how, seed)
            paths[(seed, how)] = kit.save(made, folder / f"{seed}-{how}.jpg", quality)
    return paths


@pytest.fixture(scope="module")
def measured(kit_films) -> dict[str, list[tuple[str, Comparison]]]:
    """Every copy and distinct case compared with its original."""
    copies, distinct = [], []
    for seed in SEEDS:
        original = kit_films[(seed, "")]
        for name, (how, view) in COPIES.items():
            copies.append((name, compare(original, kit_films[(seed, how)], view)))
        for name, how in DISTINCT.items():
            distinct.append((name, compare(original, kit_films[(seed, how)], View.identity)))
    return {"copies": copies, "distinct": distinct}


def test_film_kit_sizes_are_real_and_mostly_not_multiples_of_8(kit_films):
    sizes = [kit.film(seed).shape for seed in SEEDS]
    assert all(2300 <= w <= 2640 and 1252 <= h <= 1292 for h, w in sizes)
    assert all(w % 8 or h % 8 for h, w in sizes)


@pytest.mark.parametrize("name", COPIES)
def test_every_kind_of_copy_at_real_size_and_exposure_is_the_same_picture(measured, name):
    for case, result in measured["copies"]:
        if case == name:
            assert result.same_picture, (name, result.difference)


@pytest.mark.parametrize("name", DISTINCT)
def test_another_film_or_another_shot_is_not_the_same_picture(measured, name):
    for case, result in measured["distinct"]:
        if case == name:
            assert not result.same_picture, (name, result.difference)


def test_the_limit_keeps_a_quarter_margin_from_both_measured_sides(measured):
    worst_copy = max(r.difference for _, r in measured["copies"])
    closest_distinct = min(r.difference for _, r in measured["distinct"])
    assert (1 + MARGIN) * worst_copy <= SAME_PICTURE_LIMIT, worst_copy
    assert (1 - MARGIN) * closest_distinct >= SAME_PICTURE_LIMIT, closest_distinct


def test_exposure_is_fitted_not_ignored(measured):
    darker = next(r for name, r in measured["copies"] if name == "8 grey levels darker")
    assert darker.exposure is not None
    assert darker.exposure.offset == pytest.approx(-8, abs=1.5)
    gamma = next(r for name, r in measured["copies"] if name == "gamma 0.85")
    assert gamma.exposure.gamma == pytest.approx(0.85, abs=0.05)


def test_the_candidate_radius_has_headroom_over_every_copy_seen(kit_films):
    hasher = AverageHash512()
    worst = 0
    for seed in SEEDS:
        own = hasher.hash_views(kit_films[(seed, "")])
        for how, view in COPIES.values():
            copy = hasher.hash_views(kit_films[(seed, how)])[View.identity]
            worst = max(worst, hamming(own[view], copy))
    assert (1 + MARGIN) * max(worst, REAL_COPY_MAX_BITS) <= SAME_PICTURE_RADIUS, worst
    assert SAME_PICTURE_RADIUS <= (1 - MARGIN) * REAL_DISTINCT_MIN_BITS


def test_candidates_list_an_unturned_pair_once_and_a_turned_pair_each_way():
    rng = np.random.default_rng(5)

    def code() -> bytes:
        return rng.integers(0, 256, 64, dtype=np.uint8).tobytes()

    def flip(value: bytes, bits: int) -> bytes:
        array = np.unpackbits(np.frombuffer(value, np.uint8))
        array[:bits] ^= 1
        return np.packbits(array).tobytes()

    x = code()
    hashes = {f: {v: code() for v in View} for f in ("a", "b", "c")}
    hashes["a"][View.identity] = x
    hashes["b"][View.identity] = flip(x, 3)
    hashes["c"][View.rot90] = flip(x, 2)
    assert candidate_pairs(hashes, 16) == [
        ("a", "b", View.identity, 3),
        ("c", "a", View.rot90, 2),
        ("c", "b", View.rot90, 1),
    ]


def test_a_pair_confirmed_in_several_views_keeps_the_first_and_unconfirmed_pairs_go():
    same, other = Comparison(0.5, None, False), Comparison(9.0, None, False)
    candidates = [
        ("b", "a", View.mirror, 4),
        ("a", "b", View.rot180, 6),
        ("a", "c", View.rot180, 9),
    ]
    results = {View.mirror: same, View.rot180: same}
    pairs, _ = confirm_component(
        candidates, lambda a, b, view: other if "c" in (a, b) else results[view]
    )
    assert [(p.a, p.b, p.view, p.distance) for p in pairs] == [("b", "a", View.mirror, 4)]


def test_candidates_split_into_independent_components_each_closest_first():
    candidates = [
        ("d", "e", View.identity, 9),
        ("a", "b", View.mirror, 7),
        ("b", "c", View.identity, 2),
        ("a", "b", View.identity, 5),
    ]
    assert candidate_components(candidates) == [
        [("b", "c", View.identity, 2), ("a", "b", View.identity, 5), ("a", "b", View.mirror, 7)],
        [("d", "e", View.identity, 9)],
    ]


def _kit_job(kit_films, known=None) -> ComponentJob:
    seed = SEEDS[0]
    films = {"o": kit_films[(seed, "")], **{how: kit_films[(seed, how)] for how in KIT_HOWS}}
    candidates = [
        ("o", "rot180", View.rot180, 3),
        ("o", "noise:4", View.identity, 4),
        ("o", "other", View.identity, 40),
    ]
    located = {f: (str(path), f"sha-{f}", Image.open(path).size) for f, path in films.items()}
    return ComponentJob(candidates, located, known or {})


KIT_HOWS = ("rot180", "noise:4", "other")


def test_comparisons_in_worker_processes_equal_the_serial_ones_and_are_cached(
    kit_films, tmp_path, monkeypatch
):
    job = _kit_job(kit_films)
    serial = confirm_job(job)
    assert list(ordered_map(confirm_job, [job, job], workers=2)) == [serial, serial]
    assert {(p.a, p.b) for p in serial[0]} == {("o", "rot180"), ("o", "noise:4")}
    assert len(serial[1]) == 3  # the distinct film was compared and its difference kept
    cache = ComparisonCache(tmp_path / "pixels.parquet")
    cache.add_comparisons(serial[1])
    cache.save()

    def no_decoding(*args):
        raise AssertionError("a cached comparison was computed again")

    monkeypatch.setattr(pixels, "compare", no_decoding)
    again = ComparisonCache(tmp_path / "pixels.parquet")
    assert confirm_job(_kit_job(kit_films, again.comparisons)) == (serial[0], {})


def test_a_truncated_pixel_cache_is_discarded_with_a_warning_and_rebuilt(
    kit_films, tmp_path, caplog
):
    path = tmp_path / "pixels.parquet"
    cache = ComparisonCache(path)
    measured = confirm_job(_kit_job(kit_films))[1]
    cache.add_comparisons(measured)
    cache.add_grains({"sha-o": 1.5})
    cache.save()
    assert ComparisonCache(path).comparisons == measured
    assert ComparisonCache(path).grains == {"sha-o": 1.5}
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with caplog.at_level("WARNING", "pericurate"):
        again = ComparisonCache(path)
    assert again.comparisons == {} and str(path) in caplog.text


def test_a_candidate_inside_an_existing_group_is_not_compared():
    candidates = [
        ("a", "b", View.identity, 1),
        ("b", "c", View.mirror, 2),
        ("a", "c", View.mirror, 3),
        ("c", "b", View.identity, 4),  # upright pairs are always compared
    ]
    asked = []

    def compare(a, b, view):
        asked.append((a, b, view))
        return Comparison(0.1, None, True)

    pairs, skipped = confirm_component(candidates, compare)
    assert asked == [("a", "b", View.identity), ("b", "c", View.mirror), ("c", "b", View.identity)]
    assert skipped == 1 and len(pairs) == 2


def test_a_rewritten_film_is_decoded_again_not_taken_from_memory(tmp_path):
    first = kit.save(kit.film(5), tmp_path / "a.jpg", 90)
    before = pixels.reduced(first, (256, 128), True)
    kit.save(kit.film(6, kit.film(5).shape[::-1]), first, 90)  # another picture, same path
    os.utime(first, ns=(first.stat().st_atime_ns, first.stat().st_mtime_ns + 10**9))
    assert not np.array_equal(before, pixels.reduced(first, (256, 128), True))


def test_full_scale_cells_are_those_of_pillows_own_full_decode(kit_films):
    """The full-scale decode (simplejpeg) and the integer cell sums give Pillow's full-scale
    grey pixels resized by its BOX filter, to Pillow's own float32 rounding."""
    for path in sorted(kit_films.values())[:6]:
        with Image.open(path) as image:
            image.draft("L", image.size)
            grey = image.convert("L")
        box = (0, 0, *grey.size)
        expected = np.asarray(grey.convert("F").resize((256, 128), Image.Resampling.BOX, box=box))
        found = pixels.reduced(path, (256, 128), draft=False)
        assert np.abs(found - expected).max() <= 2e-5


def test_reduced_scale_cells_are_those_of_pillows_own_draft_decode(kit_films):
    """The reduced-scale decode (simplejpeg at Pillow's draft scale) gives exactly the cells
    of Pillow's draft decode resized over the draft's box, so moving to it changed nothing."""
    for path in sorted(kit_films.values())[:6]:
        with Image.open(path) as image:
            box = image.draft("L", (512, 256))[1]
            grey = image.convert("L")
        resized = grey.convert("F").resize((256, 128), Image.Resampling.BOX, box=box)
        assert np.array_equal(pixels.reduced(path, (256, 128), draft=True), np.asarray(resized))


@pytest.mark.parametrize("size", [(256, 128), (300, 146), (263, 128), (520, 254)])
def test_a_downscale_of_any_size_is_the_same_picture(tmp_path, size):
    """A downscale near the grid's size (256 x 128, the smallest film the index accepts) is the
    same picture: the larger film is resampled to the smaller's size first, as a script
    downscales, instead of boxing two sizes whose ratios to the grid differ."""
    picture = kit.film(11, (2943, 1435))
    original = kit.save(picture, tmp_path / "original.jpg")
    small = Image.fromarray(np.clip(picture, 0, 255).astype(np.uint8)).resize(
        size, Image.Resampling.BOX
    )
    copy = kit.save(np.asarray(small, np.float64), tmp_path / "small.jpg")
    result = compare(original, copy, View.identity, ((2943, 1435), size))
    assert result.same_picture, (size, result)
    assert not result.same_size


def test_a_negative_is_a_candidate_confirmed_in_pixels_and_named(tmp_path):
    """A negative's upright hash is its film's inverted (far in every orientation): it is a
    candidate by its inverted hash, the exposure fit maps it by a negative gain, and the
    dropped film is named a negative, not a re-filing."""
    picture = kit.film(13, (2000, 1000))
    paths = {
        "0101": kit.save(picture, tmp_path / "0101.jpg"),
        "0701": kit.save(255 - picture, tmp_path / "0701.jpg"),
        "0201": kit.save(kit.film(14, (2000, 1000)), tmp_path / "0201.jpg"),
    }
    hasher = AverageHash512()
    hashes = {film: hasher.hash_views(path) for film, path in paths.items()}
    found = [(a, b, view) for a, b, view, _ in candidate_pairs(hashes, SAME_PICTURE_RADIUS)]
    assert found == [("0101", "0701", View.identity)]
    result = compare(paths["0101"], paths["0701"])
    assert result.same_picture and result.exposure is not None and result.exposure.gain < 0
    pair = SamePicture("0101", "0701", View.identity, 2, result)
    facts = {f: FilmFacts(2000, 1000, (), 0.0) for f in ("0101", "0701")}
    [group] = same_picture_groups([pair], facts)
    assert [d.kind for d in group.dropped] == ["negative"]
