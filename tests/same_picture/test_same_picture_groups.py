"""The groups confirmed same-picture pairs make, and which film of a group is kept: by its
encoder signature, orientation, pixels, grain or, with nothing to decide, its number; a
frame with one more lesion is a re-filing with disagreeing labels, never a dropped copy."""

from __future__ import annotations

from dataclasses import replace

from curation.core.records import Kind, Lesion, SourceRecord
from curation.hashes.hashing import View
from curation.keeper.groups import films_needing_grain, same_picture_groups
from curation.keeper.rules import FilmFacts
from curation.keeper.settle import settle_same_picture
from curation.same_picture.candidates import SamePicture
from curation.same_picture.pixels import Comparison, Exposure

LANDSCAPE = (2455, 1271)


def _facts(**films: dict) -> dict[str, FilmFacts]:
    return {
        name: FilmFacts(
            spec.get("size", LANDSCAPE)[0],
            spec.get("size", LANDSCAPE)[1],
            spec.get("lesions", ()),
            spec.get("share", 0.0),
        )
        for name, spec in films.items()
    }


def _pair(a: str, b: str, view: View = View.identity, same_size: bool = True):
    return SamePicture(a, b, view, 3, Comparison(0.4, Exposure(0, 1, 1), same_size))


def test_a_mirrored_copy_under_a_lower_number_is_dropped_by_its_encoder_signature():
    facts = _facts(**{"0101": {"share": 1.0}, "0701": {"share": 0.0}})
    [group] = same_picture_groups([_pair("0701", "0101", View.mirror)], facts)
    assert group.kept == "0701"
    [dropped] = group.dropped
    assert (dropped.film_id, dropped.kind) == ("0101", "mirror")
    assert "encoder signature" in dropped.evidence


def test_without_evidence_the_lower_number_is_kept_and_recorded_as_undecided():
    [group] = same_picture_groups(
        [_pair("0701", "0101", View.rot180)], _facts(**{"0101": {}, "0701": {}})
    )
    assert group.kept == "0101"
    assert group.dropped[0].kind == "rotation"
    assert group.dropped[0].evidence.startswith("undecided")


def test_a_quarter_turned_copy_is_the_portrait_film_whatever_its_number():
    facts = _facts(**{"0101": {"size": LANDSCAPE[::-1]}, "0701": {}})
    [group] = same_picture_groups([_pair("0701", "0101", View.rot90, same_size=False)], facts)
    assert group.kept == "0701" and "portrait" in group.dropped[0].evidence


def test_a_rescaled_copy_is_the_film_with_fewer_pixels():
    facts = _facts(**{"0101": {"size": (2000, 1035)}, "0701": {}})
    [group] = same_picture_groups([_pair("0101", "0701", same_size=False)], facts)
    assert group.kept == "0701" and group.dropped[0].kind == "rescaled"


def test_a_same_frame_pair_is_a_copy_only_on_evidence_and_the_grainier_film_is_the_copy():
    pair = _pair("0101", "0701")
    bare = _facts(**{"0101": {}, "0701": {}})
    assert films_needing_grain([pair], bare) == []  # without copied boxes grain decides nothing
    [group] = same_picture_groups([pair], bare)
    assert (group.kept, group.dropped[0].kind) == ("0101", "re-filing")
    boxes = (Lesion((0.1, 0.2, 0.3, 0.4), 4),)
    copied = _facts(**{"0101": {"lesions": boxes}, "0701": {"lesions": boxes}})
    assert films_needing_grain([pair], copied) == ["0101", "0701"]
    [group] = same_picture_groups([pair], copied, grains={"0101": 3.6, "0701": 1.8})
    assert (group.kept, group.dropped[0].kind) == ("0701", "noised")
    assert "grainier" in group.dropped[0].evidence
    [group] = same_picture_groups([pair], copied, grains={"0101": 1.8, "0701": 3.6})
    assert (group.kept, group.dropped[0].kind) == ("0101", "noised")
    scripted = _facts(**{"0101": {"share": 0.97, "lesions": boxes}, "0701": {"lesions": boxes}})
    assert films_needing_grain([pair], scripted) == []  # the signature decides first
    [group] = same_picture_groups([pair], scripted)
    assert (group.kept, group.dropped[0].kind) == ("0701", "noised")


def test_chains_of_copies_form_one_group_with_one_film_kept():
    facts = _facts(
        **{"0101": {}, "0201": {"share": 0.9}, "0301": {"size": LANDSCAPE[::-1]}, "0401": {}}
    )
    pairs = [
        _pair("0101", "0401"),  # a re-filing
        _pair("0401", "0201", View.mirror),  # a mirror of the re-filing, script-written
        _pair("0201", "0301", View.rot90, same_size=False),  # a quarter turn of the mirror
    ]
    [group] = same_picture_groups(pairs, facts)
    assert group.kept == "0101"
    assert {d.film_id: d.kind for d in group.dropped} == {
        "0201": "mirror",
        "0301": "rotation",
        "0401": "re-filing",
    }


def test_one_frame_with_one_more_lesion_is_a_re_filing_whatever_rule_keeps_the_other():
    """The same film with one more lesion drawn and annotated: a copy would carry its source's
    boxes, so this is a re-filing with disagreeing labels, and both annotations go to the
    agreement table; never a copy dropped with its lesion."""
    lesion = Lesion((0.1, 0.2, 0.3, 0.4), 4)
    more = (lesion, Lesion((0.6, 0.5, 0.7, 0.6), 3))
    scripted = _facts(**{"0101": {"lesions": (lesion,)}, "0701": {"share": 0.97, "lesions": more}})
    [group] = same_picture_groups([_pair("0101", "0701")], scripted)
    assert [(d.film_id, d.kind) for d in group.dropped] == [("0701", "re-filing")]
    retoned = replace(_pair("0101", "0701"), frame_kinds=("re-toned", "re-toned"))
    [group] = same_picture_groups([retoned], scripted)
    assert [(d.film_id, d.kind) for d in group.dropped] == [("0701", "re-filing")]
    records = [
        SourceRecord(f"{f}.jpg", Kind.image, f, lesions=scripted[f].lesions) for f in scripted
    ]
    _, agreement = settle_same_picture(records, [group])
    assert [(p.film_id, p.other_film_id, len(p.other_lesions)) for p in agreement] == [
        ("0101", "0701", 2)
    ]
    copied = _facts(**{"0101": {"lesions": more}, "0701": {"share": 0.97, "lesions": more}})
    [group] = same_picture_groups([retoned], copied)
    assert [(d.film_id, d.kind) for d in group.dropped] == [("0701", "re-toned")]
