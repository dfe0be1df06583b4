"""The order of the keeper's rules (``curation.keeper.rules``): each rule outranks the next,
each alone outranks the number, tone rules decide only by their margins."""

from __future__ import annotations

from itertools import pairwise

import pytest

from curation.core.records import Lesion
from curation.hashes.hashing import View
from curation.keeper.groups import pairs_to_reencode, same_picture_groups
from curation.keeper.rules import KEEPER_ORDER, STRONG_RULES, FilmFacts
from curation.keeper.tone import CONTRAST_MARGIN, ROUGHNESS_MARGIN
from tests.keeper.test_keeper import _pair

LANDSCAPE = (2455, 1271)
# One way to make a film worse on each rule, everything else equal.
WORSE = {
    "augmentation copy": {"augmented_twin": "byte-identical to 036534 of the augmentation folder"},
    "script encoder": {"script_share": 1.0},
    "portrait": {"size": LANDSCAPE[::-1]},
    "turned": {"turned": View.rot180},
    "padded": {"size": (2655, 1471), "borders": (0.04, 0.07, 0.04, 0.07)},
    "upscaled": {"upscaled_from": "a smaller film of its group"},
    "fewer pixels": {"size": (2000, 1035)},
    "re-saved in colour": {"grey_in_colour": True},
    "lower quality": {"quality": 70},
    "unusual encoder": {"unusual_encoder": True},
    "filled corners": {"filled_corners": 0.2},
    "local contrast": {"contrast_departure": 6.0},
    "tone curve": {"roughness_departure": 9.0},
}


def _fact(size=LANDSCAPE, lesions=(), script_share=0.0, quality=95, **more) -> FilmFacts:
    return FilmFacts(size[0], size[1], lesions, script_share, quality=quality, **more)


def test_every_rule_of_the_order_is_tested():
    assert set(WORSE) == {name for name, _ in STRONG_RULES}
    assert KEEPER_ORDER[-3:] == ("re-encoded", "grainier", "number")


@pytest.mark.parametrize(("stronger", "weaker"), list(pairwise(WORSE)))
def test_each_rule_outranks_the_next(stronger, weaker):
    """The lower-numbered film is worse on ``stronger``, the other on the next rule: the
    stronger rule decides. Removing it, or swapping the two, keeps the wrong film."""
    facts = {"36531": _fact(**WORSE[stronger]), "090131": _fact(**WORSE[weaker])}
    [group] = same_picture_groups([_pair("36531", "090131")], facts)
    assert group.kept == "090131", group
    assert group.dropped[0].film_id == "36531"


@pytest.mark.parametrize("rule", list(WORSE))
def test_each_rule_alone_outranks_the_number(rule):
    facts = {"36531": _fact(**WORSE[rule]), "090131": _fact()}
    [group] = same_picture_groups([_pair("36531", "090131")], facts)
    assert group.kept == "090131"
    assert not group.dropped[0].evidence.startswith("undecided")


@pytest.mark.parametrize(
    ("field", "margin"),
    [("contrast_departure", CONTRAST_MARGIN), ("roughness_departure", ROUGHNESS_MARGIN)],
)
def test_a_tone_departure_decides_only_by_its_margin(field, margin):
    """Both films depart from the archive's tone; only a lead of the margin names a copy."""
    below = {"36531": _fact(**{field: 4.0 + 0.9 * margin}), "090131": _fact(**{field: 4.0})}
    [group] = same_picture_groups([_pair("36531", "090131")], below)
    assert group.kept == "36531" and group.dropped[0].evidence.startswith("undecided")
    at = {"36531": _fact(**{field: 4.0 + 1.01 * margin}), "090131": _fact(**{field: 4.0})}
    [group] = same_picture_groups([_pair("36531", "090131")], at)
    assert group.kept == "090131", group


def test_grain_decides_among_script_copies_before_the_number():
    boxes = (Lesion((0.1, 0.2, 0.3, 0.4), 4),)
    facts = {"36531": _fact(lesions=boxes), "090131": _fact(lesions=boxes)}
    pair = _pair("36531", "090131")
    [group] = same_picture_groups([pair], facts, {"36531": 3.6, "090131": 1.8})
    assert group.kept == "090131" and "grainier" in group.dropped[0].evidence


def test_a_dull_original_brightened_towards_typical_is_not_named_by_its_contrast():
    """Local contrast names only a film raised above the archive's typical: a dull original
    (3 spreads below) whose brightened copy lies nearer typical departs more, yet is kept;
    its copy's combed histogram names it."""
    facts = {
        "36531": _fact(contrast_departure=-3.0),
        "090131": _fact(contrast_departure=-1.5, roughness_departure=9.0),
    }
    [group] = same_picture_groups([_pair("36531", "090131")], facts)
    assert group.kept == "36531", group
    assert group.dropped[0].evidence.startswith("its grey histogram is combed")


def test_the_last_tone_rule_outranks_grain():
    """Of two script copies (copied boxes), the combed one is dropped though the other is
    grainier: a tone departure is measured with a margin, grain without one."""
    boxes = (Lesion((0.1, 0.2, 0.3, 0.4), 4),)
    facts = {
        "36531": _fact(lesions=boxes, **WORSE["tone curve"]),
        "090131": _fact(lesions=boxes),
    }
    [group] = same_picture_groups([_pair("36531", "090131")], facts, {"36531": 1.8, "090131": 3.6})
    assert group.kept == "090131" and "combed" in group.dropped[0].evidence


def test_a_reencoding_decides_among_tied_films_before_grain():
    """Of two tied script copies (copied boxes), the one written from the other is dropped
    though the other is grainier; the re-encoding is read only where everything before ties."""
    boxes = (Lesion((0.1, 0.2, 0.3, 0.4), 4),)
    facts = {"36531": _fact(lesions=boxes), "090131": _fact(lesions=boxes)}
    pair = _pair("36531", "090131")
    assert pairs_to_reencode([pair], facts) == [pair]
    [group] = same_picture_groups([pair], facts, {"36531": 1.8, "090131": 3.6}, {"36531": "090131"})
    assert group.kept == "090131" and "re-encoded" in group.dropped[0].evidence
    worse = {**facts, "36531": _fact(lesions=boxes, **WORSE["tone curve"])}
    assert pairs_to_reencode([pair], worse) == []  # the tone rule decides first


def test_ids_are_compared_as_numbers_and_their_text_breaks_only_an_exact_tie():
    facts = {"090131": _fact(), "36531": _fact()}
    [group] = same_picture_groups([_pair("090131", "36531", View.mirror)], facts)
    assert group.kept == "36531"  # as text, "090131" < "36531"
    assert group.dropped[0].evidence.startswith("undecided")
    facts = {"0101": _fact(), "101": _fact()}
    [group] = same_picture_groups([_pair("0101", "101")], facts)
    assert group.kept == "0101"
