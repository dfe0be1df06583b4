"""The assign step's memory beside the records it makes. Its peak set the driver's level
above 1 KiB a source file (docs/scale.md): each kept film's decision held a tuple and a text of
its own, and the annotations were settled through a list of images for every stem."""

from __future__ import annotations

import tracemalloc
from typing import cast

from curation.chain.run import Run
from curation.chain.steps import assign_splits
from curation.core.records import Fate, Kind, Lesion, SourceRecord
from curation.lookalikes.components import Cluster, Lookalikes
from splits import AssignConfig


def _records(films: int) -> list[SourceRecord]:
    lesion = (Lesion((0.1, 0.2, 0.3, 0.4), 3),)
    records = []
    for n in range(films):
        stem = f"{n:07d}"
        records.append(SourceRecord(f"Images/{stem}.jpg", Kind.image, stem, lesions=lesion))
        records.append(SourceRecord(f"Annotations/{stem}.xml", Kind.annotation, stem))
    return records


def _lookalikes(films: int) -> Lookalikes:
    """Components of four films: the assignment's own cost, a group's, is not measured here."""
    ids = [f"{n:07d}" for n in range(films)]
    clusters = [Cluster(ids[n], tuple(ids[n : n + 4])) for n in range(0, films, 4)]
    return Lookalikes(clusters, links=[], patient_links=[], templated=0, distance=30)


def _peak_beside_the_records(films: int) -> int:
    """The step's peak beyond what it returns (the records it makes, the splits)."""
    records, lookalikes = _records(films), _lookalikes(films)
    run = cast(Run, None)  # the step does not read its run
    tracemalloc.start()
    try:
        made = assign_splits(run, AssignConfig(), records, lookalikes)
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    settled = cast(list[SourceRecord], made["records"])
    assert {r.fate for r in settled} == {Fate.kept}
    return peak - held


def test_the_assign_step_holds_little_beside_the_records_it_makes() -> None:
    small, large = 1_000, 4_000
    _peak_beside_the_records(200)
    beside = (_peak_beside_the_records(large) - _peak_beside_the_records(small)) / (large - small)
    assert beside < 180, beside  # 131 B a film now; 322 before, 219 and 234 with half of it
