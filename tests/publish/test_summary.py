"""The run summary is one typed record: what the build wrote is what the readers get back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from curation.core.records import Fate, reason_class
from curation.core.vocabulary import Reason
from curation.publish.summary import Summary, SummaryError


def test_the_summary_reads_back_as_written(sample_outcome, tmp_path: Path) -> None:
    build, outcome = sample_outcome
    written = build / "curation.json"
    assert Summary.load(written) == outcome.summary
    Summary.load(written).save(tmp_path / "again.json")
    assert (tmp_path / "again.json").read_bytes() == written.read_bytes()


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda d: d.pop("counts"), "KeyError"),
        (lambda d: d["splits"]["test"].update(films="19"), "TypeError"),
        (lambda d: d["parameters"].update(fractions=[0.5, 0.5]), "TypeError"),
    ],
)
def test_a_damaged_summary_is_one_sentence(sample_build: Path, tmp_path, change, problem) -> None:
    data = json.loads((sample_build / "curation.json").read_text())
    change(data)
    path = tmp_path / "curation.json"
    path.write_text(json.dumps(data))
    with pytest.raises(SummaryError, match=rf"^{path}: not a curation summary \({problem}"):
        Summary.load(path)


def test_reasons_are_counted_by_their_class_not_by_a_prefix(sample_outcome) -> None:
    """The chain's own decisions carry a ``Reason`` class; the card counts each class exactly
    (``augmented copy`` is not ``augmented copy among originals``)."""
    build, outcome = sample_outcome
    summary = Summary.load(build / "curation.json")
    classes = {reason_class(r.reason) for r in outcome.records if r.fate is not Fate.rejected}
    assert classes <= set(Reason), classes - set(Reason)
    by_folder = sum(1 for r in outcome.records if reason_class(r.reason) == Reason.augmented_copy)
    among = Reason.augmented_copy_among_originals
    by_picture = sum(1 for r in outcome.records if reason_class(r.reason) == among)
    assert by_folder > 0 and by_picture > 0
    assert summary.counts.files("image", "dropped", Reason.augmented_copy) == by_folder
    assert summary.counts.files("image", "dropped", among) == by_picture
