"""What the audit's tests share: the ``audit`` command run in this process, and the datasets
they audit (the sample's, rewritten, or a plain image dataset made here)."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import typer
from PIL import Image
from typer.testing import CliRunner

from curation.cli.publishing import audit_command
from curation.publish.schema import shard_name

runner = CliRunner()
app = typer.Typer()
app.command("audit")(audit_command)
app.command("unused")(lambda: None)  # two commands keep "audit" as a named subcommand

FAST = ["--permutations", "999"]


def run(*args: str | Path):
    return runner.invoke(app, ["audit", *map(str, args)])


def copy_dataset(sample_dataset_dir: Path, dest: Path) -> Path:
    shutil.copytree(sample_dataset_dir, dest / "dataset")
    return dest


def shard(build: Path, split: str) -> Path:
    return build / "dataset" / "data" / shard_name(split)


def rewrite(path: Path, rows: list[dict]) -> None:
    schema = pq.read_schema(path)
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)


def jpeg(pixels: np.ndarray, quality: int = 90) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="JPEG", quality=quality)
    return buffer.getvalue()


def write_generic(folder: Path, duplicate: bool = False) -> Path:
    """A plain image dataset: only an ``image`` column, split by file name."""
    rng = np.random.default_rng(7)
    films = {
        s: [jpeg(rng.integers(0, 256, (48, 96), dtype=np.uint8)) for _ in range(6)]
        for s in ("train", "test")
    }
    if duplicate:
        films["test"].append(films["train"][2])
    folder.mkdir(parents=True)
    for split, images in films.items():
        table = pa.table({"image": pa.array(images, pa.binary())})
        pq.write_table(table, folder / f"{split}-00000-of-00001.parquet")
    return folder
