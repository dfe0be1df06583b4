"""Writing the records and the manifest holds a part of their rows as dictionaries, not every
source file's: about 1 KB a record and 0.7 KB a manifest row, a gigabyte at a million files."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from pathlib import Path

from curation.core.records import Fate, Kind, Lesion, SourceRecord, write_records
from curation.publish.build import write_manifest

SIZES = (10_000, 30_000)  # both past a part (ROWS_AT_ONCE), so a part's rows cancel out
MOST_PER_RECORD = 50  # slope of the bytes held above the records (about 950 and 360 before)


def _records(count: int) -> list[SourceRecord]:
    lesion = Lesion((0.1, 0.2, 0.3, 0.4), 3)
    return [
        SourceRecord(
            f"films/{n:06d}.jpg",
            Kind.image,
            f"{n:06d}",
            f"{n:064x}",
            1000 + n,
            "films",
            2048,
            1024,
            f"annotations/{n:06d}.xml",
            (lesion,),
            Fate.kept,
            "kept: train",
        )
        for n in range(count)
    ]


def _held_above_start(write: Callable[[], None]) -> int:
    """The traced peak of ``write`` above where it started."""
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        write()
        return tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()


def _slope(write: Callable[[list[SourceRecord]], None]) -> float:
    """Bytes held per record while writing, between the two sizes."""
    write(_records(10))  # the modules pyarrow imports on its first table are not the rows
    small, large = (_records(n) for n in SIZES)
    growth = _held_above_start(lambda: write(large)) - _held_above_start(lambda: write(small))
    return growth / (SIZES[1] - SIZES[0])


def test_writing_the_records_holds_a_part_of_them_as_rows(tmp_path: Path) -> None:
    assert _slope(lambda records: write_records(records, tmp_path / "records.parquet")) < (
        MOST_PER_RECORD
    )


def test_writing_the_manifest_holds_a_part_of_it_as_rows(tmp_path: Path) -> None:
    def write(records: list[SourceRecord]) -> None:
        published = {r.stem: r.sha256 for r in records[::2]}
        write_manifest(tmp_path / "manifest.parquet", records, published)

    assert _slope(write) < MOST_PER_RECORD
