"""The audit's range searches by average hash on a large target run a table of the
multi-index a job through the executor's map (``curation.hashes.mapped_pairs``): the films to
decode in full, the flagged cross-split pairs, the recomputed clusters and the turned copies,
with the findings of the same searches in one process."""

from __future__ import annotations

import io
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from curation.audit.audit import run_audit
from curation.core.vocabulary import SAME_PICTURE_RADIUS
from curation.hashes import mapped_pairs, pairs
from curation.leaks.identical import PIXEL_CHECK_RADIUS
from curation.leaks.leakage import Audit
from tests.audit.test_audit_at_scale import RecordingMap, textured
from tests.hashes.test_multi_index import EVERY, NEVER

FILMS = 10


def _mirrored(image: bytes) -> bytes:
    buffer = io.BytesIO()
    Image.open(io.BytesIO(image)).transpose(Image.Transpose.FLIP_LEFT_RIGHT).save(
        buffer, format="JPEG", quality=90
    )
    return buffer.getvalue()


def _target(folder: Path) -> Path:
    """Train and test of distinct films with cluster ids; the first test film is a train
    film mirrored, the second a train film's copy."""
    films = {
        "train": [textured(n) for n in range(FILMS)],
        "test": [_mirrored(textured(3)), textured(5)]
        + [textured(100 + n) for n in range(FILMS - 2)],
    }
    folder.mkdir(parents=True)
    for split, images in films.items():
        table = pa.table(
            {
                "image": pa.array(images, pa.binary()),
                "cluster_id": [f"{split}-{n}" for n in range(len(images))],
            }
        )
        pq.write_table(table, folder / f"{split}-00000-of-00001.parquet")
    return folder


def _audit(
    monkeypatch: pytest.MonkeyPatch, target: Path, index_pairs: int
) -> tuple[Audit, RecordingMap]:
    monkeypatch.setattr(mapped_pairs, "INDEX_PAIRS", index_pairs)
    monkeypatch.setattr(pairs, "INDEX_PAIRS", index_pairs)
    recording = RecordingMap()
    audit = run_audit(str(target), permutations=9, visits=False, map=recording)
    return audit, recording


def test_the_searches_run_a_table_a_job_with_the_findings_of_one_process(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    target = _target(tmp_path / "t")
    in_jobs, recording = _audit(monkeypatch, target, EVERY)
    tables = [job.table for what, job in recording.seen if what == "_search_table job"]
    pixel_tables = PIXEL_CHECK_RADIUS // 2 + 1
    turned_tables = SAME_PICTURE_RADIUS // 2 + 1
    cluster_tables = in_jobs.thresholds["ahash"] // 2 + 1
    # films to decode in full (one header), the flagged pairs (train against test), the
    # clusters, the turned copies: in that order
    searches = [pixel_tables, cluster_tables, cluster_tables, turned_tables]
    assert tables == [table for count in searches for table in range(count)]
    here, recording = _audit(monkeypatch, target, NEVER)
    assert not [what for what, _ in recording.seen if what == "_search_table job"]
    assert [(p.a, p.b, p.view) for p in in_jobs.turned] == [(p.a, p.b, p.view) for p in here.turned]
    named = [(in_jobs.films[p.a].film_id, in_jobs.films[p.b].film_id) for p in in_jobs.turned]
    assert named == [("test:0", "train:3")]  # the mirrored film, found mirrored
    assert in_jobs.clusters == here.clusters and in_jobs.clusters is not None
    assert not in_jobs.clusters["consistent"]  # the copy's two clusters: one component
    assert in_jobs.pairs == here.pairs
    assert [f.pixels for f in in_jobs.films] == [f.pixels for f in here.films]
    assert [p.distance for p in in_jobs.pairs] == [0]  # the byte copy
