"""``pericurate splits`` (what ``make splits`` runs): the five commands of the old sequence in one
process, with the same outputs, byte for byte, and the same up-to-date checks."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from curation.cli.app import app
from tests.hostile_films import film_bytes, voc, write_source

UP_TO_DATE = "up to date"
COMMANDS = ("download", "build", "card", "agreement")


def pericurate(*args: str | Path):
    return CliRunner().invoke(app, [str(a) for a in args])


def _source(tmp_path: Path) -> Path:
    films = {f"{i:04d}1": (film_bytes(i), voc(f"{i:04d}1")) for i in range(1, 41)}
    films["00411"] = (b"not a jpeg at all", voc("00411"))  # one file the build rejects
    return write_source(tmp_path / "source", films)


def _outputs(build: Path) -> dict[str, bytes]:
    """Every file a build leaves for people and the Hub (not its records of the run)."""
    return {
        str(p.relative_to(build)): p.read_bytes()
        for p in sorted(build.rglob("*"))
        if p.is_file()
        and p.relative_to(build).parts[0] not in ("work", "cache")
        and p.name != ".pericurate.lock"
    }


def _old_sequence(source: Path, build: Path) -> str:
    """The Makefile's five commands as they were, one after the other; their stdout."""
    printed = ""
    for args in (
        ["download", source, "--build", build],
        ["build", "--build", build, "--workers", "1", "--no-fail-on-rejected"],
        ["card", "--build", build],
        ["agreement", "--build", build],
        ["next", "--build", build],
    ):
        result = pericurate(*args)
        assert result.exit_code == 0, (args, result.output)
        printed += result.stdout
    return printed


def test_one_command_writes_what_the_five_wrote(tmp_path: Path):
    source = _source(tmp_path)
    five, one = tmp_path / "five" / "build", tmp_path / "one" / "build"
    printed_by_five = _old_sequence(source, five)

    result = pericurate("splits", source, "--build", one, "--workers", "1", "--no-fail-on-rejected")

    assert result.exit_code == 0, result.output
    written = _outputs(one)
    assert written == _outputs(five)
    assert {"curation.json", "manifest.parquet", "dataset/README.md"} <= set(written)
    assert _results(result.stdout, one) == _results(printed_by_five, five)


def _results(stdout: str, build: Path) -> list[str]:
    """What the commands printed on stdout, but the progress bars (their times vary)."""
    return [line for line in stdout.replace(str(build), "B").splitlines() if "━" not in line]


def test_a_rerun_does_nothing_and_the_single_commands_agree(tmp_path: Path):
    source, build = _source(tmp_path), tmp_path / "build"
    splits = ["splits", source, "--build", build, "--workers", "1", "--no-fail-on-rejected"]
    first = pericurate(*splits)
    assert first.exit_code == 0, first.output
    assert UP_TO_DATE not in first.stderr
    stamps = {p: p.stat().st_mtime_ns for p in build.rglob("*") if p.is_file()}

    again = pericurate(*splits)

    assert again.exit_code == 0, again.output
    for command in COMMANDS:
        assert f"{command}: {UP_TO_DATE}" in again.stderr, again.stderr
    assert "inter-annotator agreement" in again.stdout and "What now" in again.stdout
    assert {p: p.stat().st_mtime_ns for p in build.rglob("*") if p.is_file()} == stamps
    # the fingerprints are the single commands' own: run one by one, they are up to date too
    alone = pericurate("build", "--build", build, "--workers", "1", "--no-fail-on-rejected")
    assert f"build: {UP_TO_DATE}" in alone.stderr


def test_build_options_are_handed_on(tmp_path: Path):
    """Without --no-fail-on-rejected the rejected file stops the run before the card, as
    ``pericurate build`` alone would (exit 3)."""
    source, build = _source(tmp_path), tmp_path / "build"

    result = pericurate("splits", source, "--build", build, "--workers", "1")

    assert result.exit_code == 3, result.output
    assert "--no-fail-on-rejected" in result.stderr
    assert not (build / "dataset" / "README.md").exists()
