"""``bench.scale.audit_cluster.write_dataset`` writes the audit bench's published dataset. At
256,000 rows, holding every film until the end took its process to 6.0 GiB; at 1,000,000 rows
that would not fit the machine. So it must write each parquet file before it draws the next
file's films, and still plant the pairs the bench looks for."""

from __future__ import annotations

import pyarrow.parquet as pq

from bench.scale import audit_cluster


def test_each_file_is_written_before_the_next_one_s_films_are_drawn(tmp_path, monkeypatch):
    monkeypatch.setattr(audit_cluster, "SHARD_ROWS", 10)
    draw = audit_cluster._film
    files_when_drawn: list[int] = []

    def counted(seed: int, brighter: int = 0) -> bytes:
        files_when_drawn.append(len(list(tmp_path.glob("*.parquet"))))
        return draw(seed, brighter)

    monkeypatch.setattr(audit_cluster, "_film", counted)
    planted = audit_cluster.write_dataset(tmp_path, 100)
    # 80 train rows in 8 files, then 10 validation and 10 test rows in one file each: the
    # first film of each file is drawn once every earlier file is on disk.
    assert files_when_drawn[::10] == list(range(10))
    names = sorted(path.name for path in tmp_path.glob("*.parquet"))
    assert names[0] == "test-00000-of-00001.parquet" and len(names) == 10
    assert [pq.read_metadata(tmp_path / name).num_rows for name in names] == [10] * 10
    assert planted == {
        "copies": [["train-0000000", "test-0000000"]],
        "lookalikes": [["train-0000001", "validation-0000000"]],
    }
