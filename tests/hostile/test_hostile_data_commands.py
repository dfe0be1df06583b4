"""Commands on a build folder: outputs that disagree fail and are never up to date, one
command per build folder, and the temporary files of killed runs removed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from curation.cli.app import app
from curation.core.atomic import atomic_path, remove_leftovers
from curation.publish import build as build_module
from curation.publish.build_check import verify_build
from tests.hostile.hostile_data_source import move_first_film, rewrite_rows


def pericurate(*args: str | Path):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture
def cli_build(hostile_source, tmp_path) -> Path:
    build = tmp_path / "build"
    assert pericurate("download", hostile_source, "--build", build).exit_code == 0
    return build


BUILD = ["--workers", "1", "--no-fail-on-rejected"]


def test_a_build_whose_outputs_disagree_fails_and_is_never_up_to_date(cli_build, monkeypatch):
    write_clusters = build_module.write_clusters

    def another_runs_clusters(path, clusters, split_of):
        write_clusters(path, clusters, split_of)
        rewrite_rows(path, move_first_film)

    monkeypatch.setattr(build_module, "write_clusters", another_runs_clusters)
    failed = pericurate("build", "--build", cli_build, *BUILD)
    assert failed.exit_code == 2, failed.output
    (line,) = [x for x in failed.output.splitlines() if "clusters.parquet" in x]
    assert line.startswith(str(cli_build / "clusters.parquet"))
    assert "Traceback" not in failed.output
    assert not (cli_build / "work" / "build.fingerprint").exists()
    monkeypatch.undo()
    again = pericurate("build", "--build", cli_build, *BUILD)
    assert again.exit_code == 0 and "up to date" not in again.output, again.output
    verify_build(cli_build)


HOLDER = """
import sys
from pathlib import Path
from curation.core.build_lock import holding_build_folder
with holding_build_folder(Path(sys.argv[1]), "build"):
    print("held", flush=True)
    sys.stdin.read()
"""


@pytest.fixture
def held(cli_build):
    """The build folder held by another process, as a running build holds it."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(cli_build)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    yield cli_build
    assert holder.stdin is not None
    holder.stdin.close()
    holder.wait(timeout=30)


@pytest.mark.parametrize(
    "command",
    [
        ["build", *BUILD],
        ["index"],
        ["card"],
        ["push", "--repo", "o/n", "--dry-run"],
        ["download", "SOURCE"],
        ["audit", "BUILD"],
    ],
)
def test_a_second_command_on_a_build_folder_in_use_is_refused_in_one_sentence(
    held, hostile_source, command
):
    args = [hostile_source if a == "SOURCE" else held if a == "BUILD" else a for a in command]
    if "BUILD" not in command:
        args += ["--build", held]
    result = pericurate(*args)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert lines == [
        f"{held}: another pericurate command is using this build folder, so "
        f"'{command[0]}' did not start; wait for it to finish or use another build folder."
    ]
    assert not (held / "manifest.parquet").exists()


def test_leftovers_of_killed_runs_are_removed_when_a_run_starts(cli_build):
    dead = 2**22 + 12345  # above pid_max's default: no process has it
    leftovers = [
        cli_build / "dataset" / "data" / f".train-00000-of-00001.parquet.{dead}-7.tmp",
        cli_build / "cache" / f".index.parquet.{dead}-7.tmp",
        cli_build / "work" / f".source.json.{dead}-7.tmp",
    ]
    alive = cli_build / "cache" / f".hashes.parquet.{os.getppid()}-7.tmp"
    source = cli_build / "extracted" / f".film.jpg.{dead}-7.tmp"
    for path in [*leftovers, alive, source]:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"partial")
    result = pericurate("index", "--build", cli_build, "--workers", "1", "--no-fail-on-rejected")
    assert result.exit_code == 0, result.output
    assert not any(p.exists() for p in leftovers)
    assert alive.exists() and source.exists()  # a running process's, and the source's


def test_an_atomic_write_cut_short_leaves_a_file_the_next_run_removes(tmp_path):
    target = tmp_path / "dataset" / "data" / "train-00000-of-00001.parquet"
    killed = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, sys\nfrom pathlib import Path\n"
            "from curation.core.atomic import atomic_path\n"
            "with atomic_path(Path(sys.argv[1])) as tmp:\n"
            "    tmp.write_bytes(b'half a shard')\n    os._exit(9)\n",
            str(target),
        ],
        cwd=Path(__file__).resolve().parents[2],
        check=False,
    )
    assert killed.returncode == 9
    (left,) = target.parent.iterdir()
    assert remove_leftovers(tmp_path) == [left] and not left.exists()
    with atomic_path(target) as tmp:
        tmp.write_bytes(b"whole")
    assert [p.name for p in target.parent.iterdir()] == [target.name]
