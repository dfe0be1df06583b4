"""`make splits` ends with a "what now" table whose commands run as printed: the push dry run
on a sample build finds the build folder's source lock, is allowed the synthetic sample, and
says what a real push would change in this project."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from curation.cli.app import app

OUTPUTS = ("curation.json", "manifest.parquet", "clusters.parquet", "agreement.parquet")


@pytest.fixture
def made_like_make_splits(sample_zip, sample_build: Path, tmp_path: Path, monkeypatch) -> Path:
    """``pericurate download`` as the Makefile runs it (default lock), then the build's
    outputs (those of the session's sample build, made from the same zip)."""
    monkeypatch.chdir(tmp_path)
    build = Path("build")
    result = CliRunner().invoke(app, ["download", str(sample_zip[0]), "--build", str(build)])
    assert result.exit_code == 0, result.output
    assert (build / "source.lock.json").is_file() and not Path("source.lock.json").exists()
    for name in OUTPUTS:
        shutil.copy(sample_build / name, build / name)
    shutil.copytree(sample_build / "dataset", build / "dataset")
    return build


def printed_command(table: str, what: str) -> list[str]:
    line = next(line for line in table.splitlines() if line.strip().startswith(what))
    words = shlex.split(line.strip().removeprefix(what))
    runner = words.index(next(w for w in words if Path(w).name == "pericurate"))
    assert runner == 0, line  # the script itself, never `uv run`
    return words[runner + 1 :]


def test_the_printed_push_dry_run_works_on_the_sample_build(made_like_make_splits: Path):
    table = CliRunner().invoke(app, ["next", "--build", str(made_like_make_splits)])
    assert table.exit_code == 0, table.output
    for shown in ("dataset/data", "review/index.html", "dataset/README.md", "pericurate audit"):
        assert shown in table.stdout

    result = CliRunner().invoke(app, printed_command(table.stdout, "push, dry run"))

    assert result.exit_code == 0, result.output
    assert "would commit" in result.stdout
    for promised in ("pinned.py", "eval.toml", "wheel"):
        assert promised in result.stdout


def test_the_commands_are_the_environments_script_even_with_uv_on_path(
    made_like_make_splits: Path, monkeypatch
):
    """``uv run`` would be `command not found` where make installed uv off PATH, and where uv
    is on PATH it would install the dev tools first: the script runs as printed in both."""
    fake = made_like_make_splits.parent / "on-path"
    fake.mkdir()
    (fake / "uv").write_text("#!/bin/sh\n")
    (fake / "uv").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    table = CliRunner().invoke(app, ["next", "--build", str(made_like_make_splits)]).stdout
    for what in ("audit", "push, dry run"):
        line = next(line for line in table.splitlines() if line.strip().startswith(what))
        first = shlex.split(line.strip().removeprefix(what))[0]
        assert Path(first) == Path(sys.executable).parent / "pericurate", line


def test_a_lock_left_at_the_old_place_is_still_used_and_said(made_like_make_splits: Path):
    build = made_like_make_splits
    (build / "source.lock.json").rename("source.lock.json")
    table = CliRunner().invoke(app, ["next", "--build", str(build)]).stdout
    result = CliRunner().invoke(app, printed_command(table, "push, dry run"))
    assert result.exit_code == 0, result.output
    said = CliRunner().invoke(app, ["download", "build/extracted", "--build", "elsewhere"])
    assert "where earlier versions kept the source lock" in said.output


def test_the_agreement_and_the_audit_of_the_sample_say_synthetic_sample(made_like_make_splits):
    build = made_like_make_splits
    agreement = CliRunner().invoke(app, ["agreement", "--build", str(build)])
    assert agreement.exit_code == 0, agreement.output
    assert "(synthetic sample: generated films, not the real archive)" in agreement.stdout

    audit = CliRunner().invoke(app, ["audit", str(build), "--permutations", "10"])
    assert audit.exit_code in (0, 1), audit.output
    assert not Path("audit").exists()  # the report is in the build folder, not here
    assert "Synthetic sample" in (build / "audit" / "report.html").read_text()
    assert json.loads((build / "audit" / "report.json").read_text())["synthetic_sample"] is True
    assert "Synthetic sample" in audit.output
