"""Which film is kept when the original has a constant border of its own, when a copy is an
upscale or a grey film re-saved in colour, when a copy is turned by a few degrees, and when
nothing in the files decides (``curation.keeper.frame`` and the keeper rules
that read it). Films are drawn by the project (``support/film_kit.py``)."""

from __future__ import annotations

import io
from dataclasses import replace

import cv2
import numpy as np
import pytest
from PIL import Image

import support.film_kit as kit
from curation.core.vocabulary import SAME_PICTURE_RADIUS
from curation.index.provenance import EncoderEvidence
from curation.keeper import evidence
from curation.keeper.evidence import keeper_facts
from curation.keeper.frame import (
    CONTENT_TOLERANCE,
    PAD_MIN_SHARE,
    PAD_REREAD_SHARE,
    Frame,
    pad_share,
)
from curation.keeper.groups import same_picture_groups
from tests.keeper.keeper_films import _bordered, _crop, _decoded, _jpeg, _rescaled, _smooth
from tests.keeper.test_keeper import ORIGINALS, Archive, _pair, _radiograph


def _keep(archive: Archive, a: str, b: str, rescaled: bool = False) -> tuple[str, str]:
    """The kept film and the dropped film's evidence; the upscale read when the pair is
    ``rescaled`` (a whole-frame pair of two sizes, as the step reads it)."""
    sizes = {r.film_id: r.width for r in archive.records}
    larger = [(a, b) if sizes[a] > sizes[b] else (b, a)] if rescaled else []
    facts = keeper_facts(
        archive.root,
        archive.records,
        archive.hashes,
        [(a, b)],
        EncoderEvidence({}),
        SAME_PICTURE_RADIUS,
        rescaled=larger,
    )
    [group] = same_picture_groups([_pair(a, b)], facts)
    return group.kept, group.dropped[0].evidence


@pytest.fixture
def archive(tmp_path) -> Archive:
    """Ten upright films filed as originals, each with a dark border of its own."""
    found = Archive(tmp_path)
    for n in range(10):
        found.add(f"5{n}0001", _jpeg(_bordered(_radiograph(100 + n)), 95))
    return found


@pytest.mark.parametrize(
    "alteration",
    [
        lambda p: (p, 40),  # re-encoded
        lambda p: (kit.exposed(p, gamma=0.8), 95),  # brightened: its border is no longer black
        lambda p: (_crop(p, 0.03), 95),  # cropped past the border
        lambda p: (_crop(p, 0.01), 95),  # cropped inside the border
    ],
    ids=["re-encoded", "gamma", "cropped 3%", "cropped inside the border"],
)
def test_a_bordered_original_is_kept_over_its_copy(archive, alteration):
    """The original's own border is no pad: its copy (numbered lower, so the number alone
    would keep it) shares, brightens or cuts that border; it is the copy that is dropped."""
    original = _jpeg(_bordered(_radiograph(7)), 95)
    archive.add("36531", original)
    copy, quality = alteration(_decoded(original))
    archive.add("12341", _jpeg(copy, quality))
    kept, evidence = _keep(archive, "36531", "12341")
    assert kept == "36531", evidence
    assert not evidence.startswith("it is padded"), evidence


def test_a_pad_of_two_per_cent_on_a_bordered_original_is_still_a_pad(archive):
    """A pad of 2 % widens the border around the same picture by more than
    ``PAD_MIN_SHARE``, while a crop of 1 % inside the border (above) narrows it by less."""
    original = _jpeg(_bordered(_radiograph(7)), 95)
    archive.add("36531", original)
    decoded = _decoded(original)
    height, width = decoded.shape
    dy, dx = round(height * 0.02), round(width * 0.02)
    archive.add("12341", _jpeg(np.pad(decoded, ((dy, dy), (dx, dx))), 95))
    kept, evidence = _keep(archive, "36531", "12341")
    assert kept == "36531" and evidence.startswith("it is padded"), evidence


def test_padding_needs_a_border_wider_than_the_partners_around_no_more_picture():
    """The limits of the pair rule, either side: a pad's excess border at the limit counts
    and just below it does not; a border around more picture than the partner shows (the
    partner is a crop) is the film's own."""
    other = Frame(1000, 500, (0.0, 0.0, 0.0, 0.0))
    wide = 1 / (1 - 2 * PAD_MIN_SHARE)  # a pad of PAD_MIN_SHARE on every side, same picture
    at = Frame(round(1000 * wide), round(500 * wide), (PAD_MIN_SHARE,) * 4)
    assert pad_share(at, other) == pytest.approx(PAD_MIN_SHARE)
    below = Frame(1020, 510, (0.9 * PAD_MIN_SHARE,) * 4)
    assert pad_share(below, other) == 0.0
    more = 1 + 1.5 * CONTENT_TOLERANCE  # its picture inside the border exceeds the other's
    around_more = Frame(round(1100 * more), round(550 * more), (0.0455,) * 4)
    assert pad_share(around_more, other) == 0.0
    assert pad_share(Frame(1100, 550, (0.0455,) * 4), other) == pytest.approx(0.0455)
    assert pad_share(other, Frame(1100, 550, (0.045,) * 4)) == 0.0  # the smaller is no pad


def test_a_grey_film_re_saved_in_colour_at_a_higher_quality_is_the_copy(archive):
    """A grey archive's film re-saved as RGB 4:4:4 at quality 95 (above the original's 85):
    three equal channels are a re-save, whatever the quality."""
    original = _jpeg(_radiograph(7), 85)
    archive.add("36531", original)
    colour = io.BytesIO()
    Image.fromarray(_decoded(original).astype(np.uint8)).convert("RGB").save(
        colour, "JPEG", quality=95, subsampling=0
    )
    archive.add("12341", colour.getvalue())
    kept, evidence = _keep(archive, "36531", "12341")
    assert kept == "36531" and evidence.startswith("it is a grey picture stored in three")


def test_a_colour_archives_grey_copy_is_not_named_by_the_colour_rule(tmp_path):
    """Where the archive's films are stored in colour, storing a grey picture in colour is
    what its originals do: the colour rule stays silent and a grey copy is the odd one."""
    archive = Archive(tmp_path)
    for n in range(6):
        colour = io.BytesIO()
        Image.fromarray(_radiograph(100 + n).astype(np.uint8)).convert("RGB").save(
            colour, "JPEG", quality=90
        )
        archive.add(f"5{n}0001", colour.getvalue())
    original = io.BytesIO()
    Image.fromarray(_radiograph(7).astype(np.uint8)).convert("RGB").save(
        original, "JPEG", quality=90
    )
    archive.add("36531", original.getvalue())
    archive.add("12341", _jpeg(_decoded(original.getvalue()), 90))
    kept, evidence = _keep(archive, "36531", "12341")
    assert kept == "36531" and evidence.startswith("its encoder signature is not"), evidence


def test_an_upscaled_copy_with_more_pixels_is_the_copy(archive):
    """A copy upscaled by 1.15 has more pixels and no detail its original lacks."""
    original = _jpeg(_radiograph(7), 90)
    archive.add("36531", original)
    decoded = _decoded(original)
    height, width = decoded.shape
    size = (round(width * 1.15), round(height * 1.15))
    larger = cv2.resize(decoded, size, interpolation=cv2.INTER_CUBIC)
    archive.add("12341", _jpeg(larger, 90))
    kept, evidence = _keep(archive, "36531", "12341", rescaled=True)
    assert kept == "36531" and evidence.startswith("it is 36531 upscaled"), evidence


def test_a_downscale_is_still_the_copy_and_its_original_no_upscale(archive):
    original = _jpeg(_radiograph(7), 90)
    archive.add("36531", original)
    decoded = _decoded(original)
    height, width = decoded.shape
    smaller = cv2.resize(decoded, (width // 2, height // 2), interpolation=cv2.INTER_AREA)
    archive.add("12341", _jpeg(smaller, 90))
    kept, evidence = _keep(archive, "36531", "12341", rescaled=True)
    assert kept == "36531" and evidence.startswith("it has fewer pixels"), evidence


def test_an_upscale_of_a_film_of_faint_grain_is_the_copy(archive):
    """Its residual against its source is its own JPEG noise, as large as an original's
    against its downscale, but its DCT coefficients stay within half a step of its source
    upscaled."""
    original = _jpeg(_smooth(7, 2.0, 0.5), 90)
    archive.add("36531", original)
    archive.add("12341", _rescaled(original, 1.15, 90))
    kept, evidence = _keep(archive, "36531", "12341", rescaled=True)
    assert kept == "36531" and evidence.startswith("it is 36531 upscaled"), evidence


def test_a_downscale_written_above_its_originals_quality_leaves_the_original_kept(archive):
    """Its encoding adds too little noise to show in the original's steps; the residuals'
    lead tells it."""
    original = _jpeg(_smooth(7, 1.0, 1.0), 85)
    archive.add("36531", original)
    archive.add("12341", _rescaled(original, 1 / 1.15, 95))
    kept, evidence = _keep(archive, "36531", "12341", rescaled=True)
    assert kept == "36531" and evidence.startswith("it has fewer pixels"), evidence


@pytest.mark.parametrize("degrees", [1.0, 3.0])
def test_a_copy_turned_a_few_degrees_of_a_bordered_original_is_the_copy(archive, degrees):
    """The original's own border leaves its corners inside that border clean, as the
    archive's level films are; the turned copy's corners are filled."""
    original = _jpeg(_bordered(_radiograph(7)), 95)
    archive.add("36531", original)
    decoded = _decoded(original).astype(np.uint8)
    turned = Image.fromarray(decoded).rotate(degrees, Image.Resampling.BILINEAR)
    archive.add("12341", _jpeg(np.asarray(turned), 95))
    kept, evidence = _keep(archive, "36531", "12341")
    assert kept == "36531" and evidence.startswith("its corners are filled black"), evidence


def test_a_pair_nothing_in_the_files_separates_is_recorded_as_undecided(archive):
    """One picture written twice by the same writer, each from its own source scan
    (another grain): no fact of the files tells them apart, and the evidence says so."""
    picture = _radiograph(7)
    archive.add("36531", _jpeg(kit.noised(picture, 1.0, 1), 95))
    archive.add("12341", _jpeg(kit.noised(picture, 1.0, 2), 95))
    kept, evidence = _keep(archive, "36531", "12341")
    assert kept == "12341"
    assert evidence.startswith("undecided: nothing in the files tells which film is the original")


def test_a_pad_the_draft_reads_near_its_limit_is_read_again_at_full_size(archive, monkeypatch):
    """On archive-sized films a pad of 2 % read 1.04 % on the draft decode (JPEG ringing at
    1/8 scale eats a draft pixel of it), under ``PAD_MIN_SHARE``: a pair the draft reads
    between ``PAD_REREAD_SHARE`` and that limit is read again at full size, where the pad
    is whole. The draft's loss is simulated here (half of every border)."""
    drafted = evidence.header_and_border

    def narrow_draft(path):
        read = drafted(path)
        return replace(read, borders=tuple(round(side / 2, 4) for side in read.borders))

    monkeypatch.setattr(evidence, "header_and_border", narrow_draft)
    original = _jpeg(_radiograph(7), 95)
    archive.add("36531", original)
    decoded = _decoded(original)
    height, width = decoded.shape
    dy, dx = round(height * 0.02), round(width * 0.02)
    archive.add("12341", _jpeg(np.pad(decoded, ((dy, dy), (dx, dx))), 95))
    draft = evidence.header_and_border(archive.root / ORIGINALS / "12341.jpg").borders
    assert PAD_REREAD_SHARE <= max(draft) < PAD_MIN_SHARE
    kept, evidence_of_copy = _keep(archive, "36531", "12341")
    assert kept == "36531" and evidence_of_copy.startswith("it is padded"), evidence_of_copy


def _dark_cornered(seed: int) -> np.ndarray:
    """A film black below the jaw into its two bottom corners, as archive-sized films often
    are (dark quarter-discs reaching into those corners)."""
    picture = _radiograph(seed)
    height, width = picture.shape
    ys, xs = np.mgrid[0:height, 0:width]
    for cx in (0, width):
        picture[(xs - cx) ** 2 + (ys - height) ** 2 < (height // 5) ** 2] = 0
    return picture


def test_an_original_with_dark_corners_of_its_own_is_kept_over_its_brightened_copy(tmp_path):
    """A copy brightened by 10 grey levels lifts the black of an original's own dark
    corners; read over the four corners together the original looked filled. A rotation
    fills all four corners; these fill two. (The archive's films are dark-cornered too.)"""
    archive = Archive(tmp_path)
    for n in range(10):
        archive.add(f"5{n}0001", _jpeg(_dark_cornered(100 + n), 95))
    original = _jpeg(_dark_cornered(7), 95)
    archive.add("12341", original)
    archive.add("36531", _jpeg(kit.exposed(_decoded(original), offset=10), 95))
    kept, evidence_of_copy = _keep(archive, "12341", "36531")
    assert kept == "12341", evidence_of_copy
    assert not evidence_of_copy.startswith("its corners"), evidence_of_copy
