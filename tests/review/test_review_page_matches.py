"""The matched features a framed copy's enlarged view draws: the frame check's own matches,
read from the features the same-picture step stored, never described again."""

from __future__ import annotations

from pathlib import Path

from curation.review.closeness import ReviewGroup, ReviewMember
from curation.review.review import write_review_page


def test_a_confirmed_crop_to_half_its_sides_is_drawn_with_the_frame_checks_matches(tmp_path):
    """A crop keeping about half of each side has fewer inliers than a whole frame asks for;
    its card still draws the frame check's matches (one transform), not none."""
    from curation.features.features import decoded_grey, film_features, match_features
    from curation.review.films import matched_points
    from curation.same_picture.frame_limits import FEATURES
    from support import film_kit as kit

    picture = kit.film(3)
    original = kit.save(picture, tmp_path / "original.jpg", quality=90)
    crop = kit.save(kit.cropped(picture, 0.24), tmp_path / "crop.jpg", quality=90)
    match = match_features(
        *(film_features(*decoded_grey(p.read_bytes())) for p in (original, crop))
    )
    assert match.inliers < FEATURES.min_inliers  # the whole frame's count is not reached
    drawn = matched_points(original, crop)
    assert drawn is not None and len(drawn[0]) == match.inliers


def test_a_framed_copys_view_draws_the_same_matches_from_the_same_picture_steps_features(
    tmp_path, monkeypatch
):
    """The page reads the local features the same-picture step computed instead of computing
    them again (a build's costliest part of the page): the view is byte for byte the one
    drawn from features computed here, and no film is described twice."""
    from curation.features.features import decoded_grey, film_features
    from curation.review import films as review_films
    from support import film_kit as kit

    picture = kit.film(3)
    paths = {
        "orig": kit.save(picture, tmp_path / "orig.jpg", quality=90),
        "crop": kit.save(kit.cropped(picture, 0.1), tmp_path / "crop.jpg", quality=90),
    }
    crop = ReviewMember("crop", False, "cropped", "identity", 9, 0.2, 0.65, "crop", framed=True)
    group = ReviewGroup("orig", (crop,))

    def page(out: Path, **given) -> str:
        write_review_page(out, [group], [], paths.__getitem__, title="t", synthetic=False, **given)
        return (out / "index.html").read_text("utf-8")

    computed = page(tmp_path / "computed")
    assert "<line " in computed  # the framed copy's matches are drawn
    held = {f: film_features(*decoded_grey(p.read_bytes())) for f, p in paths.items()}

    def described_again(*args, **kwargs):
        raise AssertionError("the page described a film the same-picture step had described")

    monkeypatch.setattr(review_films, "film_features", described_again)
    assert page(tmp_path / "held", features=held.get) == computed
