"""The card is rendered from the build: it parses as a Hub dataset card and every figure in
it equals the build's own."""

from __future__ import annotations

import json
import re
import shutil
import unicodedata
from importlib.resources import files
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import typer
from huggingface_hub import DatasetCard
from jinja2 import Environment, meta
from periapical_lesions.data import card_row_count
from typer.testing import CliRunner

from curation.cli.publishing import card_command
from curation.publish.card import SYNTHETIC_NOTE, TEMPLATE, CardError, card_values, render_card
from curation.publish.schema import SPLITS, shard_name
from curation.publish.summary import Summary

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


# Texts the card shows that the toolkit does not vouch for: the largest component's id is a
# film id, the salt and the revision are the user's. Each tries to end its line, break out of
# its code span, open a heading, a table, a link or a tag.
HOSTILE = {
    "cluster": "0001`](javascript:x) <script>x</script> | a |\n|---|---|\n# owned\r\n\n[l](http://e)",
    "salt": "`salt`` | <b>x</b>\u2028## heading",
    "revision": "rev\n\n## Injected\n\n<img src=x onerror=alert(1)>",
}


def shown_code(span: str) -> str:
    """What one CommonMark inline code span shows; fails unless ``span`` is exactly one span on
    one line (a run of backticks as long as the fence would close it early)."""
    match = re.fullmatch(r"(`+)(.*)\1", span, flags=re.DOTALL)
    assert match, span
    fence, content = match.groups()
    assert "\n" not in content and "\r" not in content, span
    assert len(fence) not in {len(run) for run in re.findall("`+", content)}, span
    assert not content.startswith("`") or content.startswith(" "), span
    if content.startswith(" ") and content.endswith(" ") and content.strip(" "):
        content = content[1:-1]
    return content


def visible(text: str) -> str:
    return "".join(
        "\ufffd" if unicodedata.category(c) == "Cc" or c in "\u2028\u2029" else c for c in text
    )


def test_hostile_texts_stay_inside_one_code_span(sample_build: Path, tmp_path: Path) -> None:
    build = tmp_path / "build"
    shutil.copytree(sample_build / "dataset", build / "dataset")
    shutil.copy(sample_build / "agreement.parquet", build)
    summary = json.loads((sample_build / "curation.json").read_text())
    plain = {
        "cluster": summary["counts"]["largest_clusters"][0]["cluster_id"],
        "salt": summary["parameters"]["build"]["referral_salt"],
        "revision": "a" * 40,
    }
    summary["counts"]["largest_clusters"][0]["cluster_id"] = HOSTILE["cluster"]
    summary["parameters"]["build"]["referral_salt"] = HOSTILE["salt"]
    (build / "curation.json").write_text(json.dumps(summary))

    expected = render_card(sample_build, plain["revision"]).split("\n")
    card = render_card(build, HOSTILE["revision"])
    lines = card.split("\n")

    assert len(lines) == len(expected)  # no value added a line
    changed = [(old, new) for old, new in zip(expected, lines, strict=True) if old != new]
    assert len(changed) == len(HOSTILE)
    for (old, new), key in zip(changed, ("cluster", "salt", "revision"), strict=True):
        prefix, suffix = old.split(f"`{plain[key]}`")
        assert new.startswith(prefix) and new.endswith(suffix), (key, new)
        assert shown_code(new[len(prefix) : len(new) - len(suffix)]) == visible(HOSTILE[key])
    assert DatasetCard(card).data.to_dict() == DatasetCard("\n".join(expected)).data.to_dict()


def test_the_card_template_uses_exactly_the_values_it_is_given(sample_build: Path) -> None:
    """``from_template`` renders a name it was not given as nothing: so none may be missing."""
    summary = Summary.load(sample_build / "curation.json")
    template = files("cards").joinpath(TEMPLATE).read_text(encoding="utf-8")
    used = meta.find_undeclared_variables(Environment().parse(template))
    given = set(card_values(summary, "agreement", "a" * 40))
    assert used == given | {"card_data", "pretty_name"}  # the card data's own names
