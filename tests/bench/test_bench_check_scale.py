"""``bench.margins.check_scale`` measures the pixel check with its full-size decodes made at reduced
scale; at scale 1 it must be the check itself, or its other columns would describe another
check."""

from __future__ import annotations

from bench.margins.check_scale import compare_at_scale
from curation.hashes.hashing import View
from curation.same_picture.pixels import compare
from support import film_kit as kit


def test_at_full_scale_it_is_the_pixel_check_and_a_reduced_scale_moves_turned_copies(tmp_path):
    picture = kit.film(3)
    original = kit.save(picture, tmp_path / "original.jpg", 92)
    copies = {
        View.rot180: kit.save(kit.turned(picture, "rot180"), tmp_path / "turned.jpg", 85),
        View.rot90: kit.save(kit.turned(picture, "rot90"), tmp_path / "quarter.jpg", 85),
        View.identity: kit.save(kit.scaled(picture, 0.9), tmp_path / "scaled.jpg", 85),
    }
    for view, copy in copies.items():
        checked = compare(original, copy, view)
        assert checked.same_picture
        assert compare_at_scale(original, copy, view, scale=1) == checked
        assert compare_at_scale(original, copy, view, scale=2).difference > checked.difference
