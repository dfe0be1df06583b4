"""An image that no decoder can read is named by its file (or shard and row), never by the
in-memory buffer Pillow was handed (``<_io.BytesIO object at 0x...>``)."""

from __future__ import annotations

import re

import pyarrow as pa
import pyarrow.parquet as pq
from typer.testing import CliRunner

from curation.cli.app import app
from curation.core.vocabulary import Decode
from curation.hashes.hash_films import _hash_one
from curation.hashes.thumbnails import thumbnail_store
from tests.audit.audit_runs import write_generic

BUFFER = re.compile(r"BytesIO|0x[0-9a-f]+")


def test_an_audited_image_that_is_no_image_names_its_shard_and_row(tmp_path):

    folder = write_generic(tmp_path / "data")
    shard = folder / "test-00000-of-00001.parquet"
    images = [*pq.read_table(shard).column("image").to_pylist(), b"<html>Session expired</html>"]
    pq.write_table(pa.table({"image": pa.array(images, pa.binary())}), shard)
    args = ["audit", str(folder), "--out", str(tmp_path / "out"), "--workers", "1"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, (result.output, result.exception)
    line = result.output.splitlines()[-1]
    assert line == (
        f"{shard} row 6: the image cannot be decoded (no image format recognises its bytes)."
    )
    assert not BUFFER.search(line)


def test_a_hashed_file_that_is_no_image_has_a_reason_without_a_buffer(tmp_path):
    path = tmp_path / "00011.jpg"
    path.write_bytes(b"GIF89a but not really")
    thumbnails = thumbnail_store(tmp_path / "thumbnails")
    views, problem = _hash_one((str(path), Decode.draft, (10, 10), "0" * 64, thumbnails))
    assert views is None and "0" * 64 not in thumbnails
    assert problem == "image does not decode: no image format recognises its bytes"
