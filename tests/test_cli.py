"""The command line's errors: one plain line naming the file and the problem, exit 2 for
usage and source errors, and file names or reasons shown as they are (never as markup)."""

from __future__ import annotations

from typer.testing import CliRunner

from curation.cli import app
from tests.hostile_films import film_bytes, voc, write_source


def _lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.strip()]


def test_a_source_named_like_markup_is_shown_as_it_is(tmp_path):
    name = str(tmp_path / "films[/red] [bold]x.zip")
    result = CliRunner().invoke(app, ["download", name, "--build", str(tmp_path / "b")])
    assert result.exit_code == 2, result.output
    assert _lines(result.output) == [f"{name}: no such file or folder."]


def test_a_corrupt_source_record_is_one_sentence(tmp_path):
    record = tmp_path / "work" / "source.json"
    record.parent.mkdir(parents=True)
    for text in ('{"root": "/x", "orig', "[]", '{"root": 3}'):
        record.write_text(text)
        result = CliRunner().invoke(app, ["index", "--build", str(tmp_path)])
        assert result.exit_code == 2, result.output
        (line,) = _lines(result.output)
        assert line.startswith(f"{record}: not a valid source record") and "download" in line


def test_a_missing_source_record_is_one_sentence(tmp_path):
    result = CliRunner().invoke(app, ["hash", "--build", str(tmp_path)])
    assert result.exit_code == 2
    assert _lines(result.output) == [
        f"{tmp_path / 'work' / 'source.json'}: no source yet; run `pericurate download` first."
    ]


def test_a_source_folder_named_like_markup_is_shown_as_it_is(tmp_path):
    root = write_source(tmp_path / "films [/x] [bold]", {"00011": (film_bytes(1), voc("00011"))})
    build = str(tmp_path / "build")
    result = CliRunner().invoke(app, ["download", str(root), "--build", build])
    assert result.exit_code == 0, result.output
    assert _lines(result.output) == [f"source ready at {root}"]
