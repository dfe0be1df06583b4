"""An annotation shares the fate of the one image its stem names; a stem that names none or
several images leaves it rejected, with the count in its reason."""

from __future__ import annotations

from curation.core.records import Fate, Kind, SourceRecord, settle_annotations


def _image(stem: str, fate: Fate, folder: str = "Images") -> SourceRecord:
    record = SourceRecord(f"{folder}/{stem}.jpg", Kind.image, stem)
    return record.settle(fate, f"{fate.value}: by a rule") if fate is not Fate.pending else record


def _annotation(stem: str) -> SourceRecord:
    return SourceRecord(f"Annotations/{stem}.xml", Kind.annotation, stem)


def _settled(records: list[SourceRecord]) -> dict[str, tuple[Fate, str, str]]:
    return {
        r.path: (r.fate, r.reason, r.related)
        for r in settle_annotations(records)
        if r.kind is Kind.annotation
    }


def test_an_annotation_takes_its_films_fate_and_names_it() -> None:
    records = [_image("a", Fate.kept), _annotation("a"), _image("b", Fate.dropped)]
    records += [_annotation("b"), _image("c", Fate.rejected), _annotation("c")]
    assert _settled(records) == {
        "Annotations/a.xml": (Fate.kept, "annotation of a kept film: a", "Images/a.jpg"),
        "Annotations/b.xml": (Fate.dropped, "annotation of a dropped film: b", "Images/b.jpg"),
        "Annotations/c.xml": (Fate.rejected, "annotation of a rejected film: c", "Images/c.jpg"),
    }


def test_a_stem_naming_no_image_or_several_rejects_the_annotation_with_the_count() -> None:
    records = [_annotation("alone"), _image("twice", Fate.kept), _annotation("twice")]
    records += [_image("twice", Fate.kept, "Augmented"), _image("thrice", Fate.kept)]
    records += [_image("thrice", Fate.kept, "B"), _image("thrice", Fate.kept, "C")]
    records += [_annotation("thrice")]
    rejected = "ambiguous annotation: its stem names"
    assert _settled(records) == {
        "Annotations/alone.xml": (Fate.rejected, f"{rejected} 0 images", ""),
        "Annotations/twice.xml": (Fate.rejected, f"{rejected} 2 images", ""),
        "Annotations/thrice.xml": (Fate.rejected, f"{rejected} 3 images", ""),
    }


def test_records_keep_their_order_and_a_settled_annotation_its_fate() -> None:
    settled = _annotation("a").settle(Fate.ignored, "ignored: by the curator")
    records = [_image("b", Fate.kept), settled, _image("a", Fate.kept), _annotation("b")]
    out = settle_annotations(records)
    assert [r.path for r in out] == [r.path for r in records]
    assert out[1] is settled
    assert (out[3].fate, out[3].related) == (Fate.kept, "Images/b.jpg")
