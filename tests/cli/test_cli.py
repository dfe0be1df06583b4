"""The command line's errors: one plain line naming the file and the problem, exit 2 for
usage and source errors, and file names or reasons shown as they are (never as markup)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from typer.testing import CliRunner

from curation.cli.app import app
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


def test_help_at_80_columns_cuts_no_option_and_names_what_target_is():
    result = CliRunner().invoke(app, ["build", "--help"], env={"COLUMNS": "80"}, terminal_width=80)
    assert result.exit_code == 0
    assert "--no-fail-on-rejected" in result.output
    assert all(len(line) <= 80 for line in result.output.splitlines())
    audit = CliRunner().invoke(app, ["audit", "--help"], env={"COLUMNS": "80"}, terminal_width=80)
    words = " ".join(audit.output.split())
    assert "TARGET is a build folder, a folder of parquet files, or a Hub dataset" in words
    assert "TEXT" not in audit.output.split("Options:")[0]


def test_a_failed_download_leaves_no_build_folder(tmp_path):
    build = tmp_path / "build"
    result = CliRunner().invoke(app, ["download", str(tmp_path / "no.zip"), "--build", str(build)])
    assert result.exit_code == 2
    assert not build.exists()


def test_rejected_files_name_the_way_on_and_the_summary_shows_no_python_dict(tmp_path):
    films = {f"{i:04d}1": (film_bytes(i), voc(f"{i:04d}1")) for i in range(1, 41)}
    films["00411"] = (b"not a jpeg", voc("00411"))
    root = write_source(tmp_path / "source", films)
    build = str(tmp_path / "build")
    assert CliRunner().invoke(app, ["download", str(root), "--build", build]).exit_code == 0
    result = CliRunner().invoke(app, ["build", "--build", build, "--workers", "1"])
    assert result.exit_code == 3, result.output
    words = " ".join(result.output.split())
    assert "source files were rejected" in words and "pass --no-fail-on-rejected" in words
    assert "dropped by kind: none" in words
    assert "{'" not in result.output and "{}" not in result.output


def test_sample_shows_its_progress_and_writes_the_same_bytes(small_sample, tmp_path):
    zip_path, truth = small_sample
    dest = tmp_path / "sample.zip"
    args = ["sample", str(dest), "--films", str(truth.films), "--seed", str(truth.seed)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "draw films" in result.stderr and "write zip" in result.stderr
    assert dest.read_bytes() == zip_path.read_bytes()


def test_every_commands_help_imports_nothing_heavy():
    """A command's help needs its signature only: the modules behind ``audit`` and ``push``
    import numpy, pyarrow and the Hub client inside their bodies (help in ~0.5 s, not ~2 s)."""
    heavy = ("numpy", "pyarrow", "huggingface_hub", "faiss", "networkx", "PIL", "cv2", "datasets")
    probe = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from curation.cli.app import app\n"
        "for name in ('audit', 'push', 'card', 'agreement', 'build', 'download'):\n"
        "    assert CliRunner().invoke(app, [name, '--help']).exit_code == 0, name\n"
        f"print(sorted(m for m in {heavy!r} if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


OUT_OF_RANGE = [
    (
        ["build", "--build", "{build}", "--fractions", "0.5", "0.5", "0.5"],
        "--fractions",
        "must sum to 1",
    ),
    (
        ["build", "--build", "{build}", "--fractions", "-0.2", "0.6", "0.6"],
        "--fractions",
        "not in the range",
    ),
    (["build", "--build", "{build}", "--fractions", "1", "0", "0"], "--fractions", "empty split"),
    (
        ["build", "--build", "{build}", "--fractions", "nan", "0.5", "0.5"],
        "--fractions",
        "three numbers",
    ),
    (["build", "--build", "{build}", "--workers", "-1"], "--workers", "not in the range"),
    (
        ["lookalikes", "--build", "{build}", "--lookalike-distance", "-1"],
        "--lookalike-distance",
        "not in the range",
    ),
    (
        ["build", "--build", "{build}", "--lookalike-distance", "600"],
        "--lookalike-distance",
        "not in the range",
    ),
    (
        ["build", "--build", "{build}", "--same-picture-distance", "513"],
        "--same-picture-distance",
        "not in the range",
    ),
    (["audit", "{build}", "--threshold", "-3"], "--threshold", "not in the range"),
    (["audit", "{build}", "--workers", "-1"], "--workers", "not in the range"),
    (["audit", "{build}", "--out", "{file}"], "--out", "is a file"),
    (["download", "{build}", "--build", "{file}"], "--build", "is a file"),
    (["build", "--build", "{file}"], "--build", "is a file"),
    (["sample", "{build}", "--films", "30"], "DEST", "is a directory"),
    (["sample", "{build}/s.zip", "--seed", "-7"], "--seed", "not in the range"),
]


@pytest.mark.parametrize(("args", "option", "problem"), OUT_OF_RANGE)
def test_a_value_out_of_its_range_is_one_usage_error(tmp_path, args, option, problem):
    """Ranges are declared on the configs (and the commands' own options): a value outside
    one is refused by the command line, naming the option, before anything runs."""
    (tmp_path / "work").mkdir()
    (tmp_path / "file").write_text("x")
    names = {"build": str(tmp_path), "file": str(tmp_path / "file")}
    result = CliRunner().invoke(app, [arg.format(**names) for arg in args])
    assert result.exit_code == 2, (result.output, result.exception)
    error = _lines(result.output)[-1]
    assert error.startswith("Error: Invalid value for") and option in error and problem in error
    assert not (tmp_path / "s.zip").exists()


def test_sample_does_not_write_over_an_existing_file_unless_forced(tmp_path):
    dest = tmp_path / "mine.zip"
    dest.write_bytes(b"someone's archive")
    result = CliRunner().invoke(app, ["sample", str(dest), "--films", "30"])
    assert result.exit_code == 2
    assert _lines(result.output) == [f"{dest}: already exists; pass --force to write over it."]
    assert dest.read_bytes() == b"someone's archive"


@pytest.mark.parametrize(
    ("typed", "suggested"), [("audti", "audit"), ("biuld", "build"), ("hsah", "hash")]
)
def test_a_mistyped_command_gets_one_suggestion(typed, suggested):
    result = CliRunner().invoke(app, [typed])
    assert result.exit_code == 2
    assert _lines(result.output)[-1] == (
        f"Error: No such command '{typed}'. Did you mean '{suggested}'?"
    )


def test_a_command_far_from_every_name_gets_no_suggestion():
    result = CliRunner().invoke(app, ["xyzzy"])
    assert _lines(result.output)[-1] == "Error: No such command 'xyzzy'."


def test_a_file_url_of_a_source_folder_reads_that_folder(tmp_path):
    root = write_source(tmp_path / "films of 2024", {"00011": (film_bytes(1), voc("00011"))})
    build = str(tmp_path / "build")
    result = CliRunner().invoke(app, ["download", root.as_uri(), "--build", build])
    assert result.exit_code == 0, result.output
    assert _lines(result.output) == [f"source ready at {root}"]


def test_a_file_url_on_another_host_is_one_sentence(tmp_path):
    url = "file://archive-server/films.zip"
    result = CliRunner().invoke(app, ["download", url, "--build", str(tmp_path / "b")])
    assert result.exit_code == 2
    assert _lines(result.output) == [
        f"{url}: a file URL on another host (archive-server) cannot be read; give a local "
        "path or an http(s) URL."
    ]
