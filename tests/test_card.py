"""The card is rendered from the build: it parses as a Hub dataset card and every figure in
it equals the build's own."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import typer
from huggingface_hub import DatasetCard
from periapical_lesions.data import card_row_count
from typer.testing import CliRunner

from cards.card import SYNTHETIC_NOTE, CardError, render_card
from curation.cli.publishing import card_command
from curation.publish.schema import SPLITS, shard_name

app = typer.Typer()
app.command()(card_command)


def test_card_parses_and_its_numbers_are_the_builds(sample_build: Path) -> None:
    text = render_card(sample_build)
    card = DatasetCard(text)
    meta = card.data.to_dict()
    assert meta["license"] == "cc-by-4.0" and meta["task_categories"] == ["object-detection"]
    summary = json.loads((sample_build / "curation.json").read_text())
    rows = {
        s: pq.ParquetFile(sample_build / "dataset" / "data" / shard_name(s)).metadata.num_rows
        for s in SPLITS
    }
    assert {s["name"]: s["num_examples"] for s in meta["dataset_info"]["splits"]} == rows
    assert meta["configs"][0]["data_files"] == [
        {"split": s, "path": f"data/{s}-*.parquet"} for s in SPLITS
    ]
    for split in SPLITS:
        f = summary["splits"][split]
        row = f"| {split} | {f['films']} | {f['lesions']} | {f['pai3']} | {f['pai4']} | "
        assert row + f"{f['pai5']} | {f['lesion_free']} |" in card.text
    largest = summary["counts"]["largest_clusters"][0]
    assert f"`{largest['cluster_id']}` with {largest['films']} films" in card.text
    assert f"{summary['counts']['clusters']} components" in card.text
    assert SYNTHETIC_NOTE in card.text
    assert render_card(sample_build) == text


def test_card_command_writes_card_and_licence_files(sample_build: Path, tmp_path: Path) -> None:
    build = tmp_path / "build"
    shutil.copytree(sample_build, build, ignore=shutil.ignore_patterns("work", "cache"))
    result = CliRunner().invoke(app, ["--build", str(build), "--revision", "a" * 40])
    assert result.exit_code == 0, result.output
    assert f"`{'a' * 40}`" in (build / "dataset" / "README.md").read_text()
    notice = (build / "dataset" / "NOTICE").read_text()
    assert "Do et al." in notice and "10.17632/kx52tk2ddj.3" in notice and "CC BY 4.0" in notice


def test_card_without_build_says_so(tmp_path: Path) -> None:
    with pytest.raises(CardError, match=r"curation\.json"):
        render_card(tmp_path)


def test_split_sizes_mean_what_the_hub_means(sample_build: Path, tmp_path: Path) -> None:
    """``num_bytes`` is the split's Arrow data, as ``datasets`` records it on loading;
    ``download_size`` the shard files; and the environment reads the counts back."""
    info = DatasetCard(render_card(sample_build)).data.to_dict()["dataset_info"]
    shards = {s: sample_build / "dataset" / "data" / shard_name(s) for s in SPLITS}
    assert {row["name"]: row["num_bytes"] for row in info["splits"]} == {
        s: pq.read_table(path).nbytes for s, path in shards.items()
    }
    assert info["dataset_size"] == sum(row["num_bytes"] for row in info["splits"])
    assert info["download_size"] == sum(path.stat().st_size for path in shards.values())
    build = tmp_path / "build"
    shutil.copytree(sample_build, build, ignore=shutil.ignore_patterns("work", "cache"))
    card = CliRunner().invoke(app, ["--build", str(build)])
    assert card.exit_code == 0, card.output
    for split, path in shards.items():
        rows = pq.ParquetFile(path).metadata.num_rows
        assert card_row_count(build / "dataset" / "README.md", split) == rows
