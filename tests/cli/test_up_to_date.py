"""A command with nothing to do says so and touches nothing; any change of an input, a
parameter, the code or an output makes it run again (``curation.cli.up_to_date``)."""

from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from curation.cli import fingerprint
from curation.cli.app import app
from tests.hostile_films import FILMS, film_bytes, voc, write_source

UP_TO_DATE = "up to date"
OLD_NS = 10**18  # long before any run, so the racy rule trusts the file's stat


def pericurate(*args: str | Path):
    return CliRunner().invoke(app, [str(a) for a in args])


def steps(source: Path, build: Path, lock: Path | None = None) -> dict[str, list[str | Path]]:
    """The commands of ``make splits`` (hash workers in this process)."""
    lock = lock or build.parent / "source.lock.json"
    return {
        "download": ["download", source, "--build", build, "--lock", lock],
        "build": ["build", "--build", build, "--workers", "1", "--no-fail-on-rejected"],
        "card": ["card", "--build", build],
        "agreement": ["agreement", "--build", build],
    }


def folder_source(tmp_path: Path) -> Path:
    films = {f"{i:04d}1": (film_bytes(i), voc(f"{i:04d}1")) for i in range(1, 41)}  # >= 35
    return write_source(tmp_path / "source", films)


def run_all(commands: dict[str, list[str | Path]]) -> dict[str, str]:
    """Run every command; each must succeed. Returns each one's stderr."""
    said = {}
    for name, args in commands.items():
        result = pericurate(*args)
        assert result.exit_code == 0, (name, result.output)
        said[name] = result.stderr
    return said


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file below ``folder`` by its inode and modification time."""
    return {
        str(p): (p.stat().st_ino, p.stat().st_mtime_ns) for p in folder.rglob("*") if p.is_file()
    }


@pytest.fixture
def built(tmp_path: Path) -> tuple[Path, dict[str, list[str | Path]]]:
    """A folder source curated once by the four commands of ``make splits``."""
    build = tmp_path / "build"
    commands = steps(folder_source(tmp_path), build)
    said = run_all(commands)
    assert not any(UP_TO_DATE in text for text in said.values())
    return build, commands


def test_a_second_run_does_nothing_and_says_so(built):
    build, commands = built
    before = snapshot(build)
    agreement_line = pericurate(*commands["agreement"]).stdout

    said = run_all(commands)

    for name, text in said.items():
        assert f"{name}: {UP_TO_DATE}" in text, (name, text)
    assert snapshot(build) == before  # not one file rewritten
    assert "inter-annotator agreement" in agreement_line
    assert pericurate(*commands["agreement"]).stdout == agreement_line  # the result, again


def touch(path: Path) -> None:
    os.utime(path, ns=(OLD_NS + 10**9, OLD_NS + 10**9))


def rewrite_film(build: Path) -> None:
    source = Path(json.loads((build / "work" / "source.json").read_text())["root"])
    film = source / FILMS / "00011.jpg"
    film.write_bytes(film_bytes(99))
    os.utime(film, ns=(OLD_NS, OLD_NS))  # same old date: only the size and content differ


def source_of(build: Path) -> Path:
    return Path(json.loads((build / "work" / "source.json").read_text())["root"])


# Each change, and the commands it must make run again (the others stay up to date: a
# command that runs again writes the same bytes, so the commands after it see no change).
CHANGES: dict[str, tuple[Callable[[Path], None], set[str]]] = {
    "source film touched": (lambda b: touch(source_of(b) / FILMS / "00011.jpg"), {"build"}),
    "source film rewritten": (rewrite_film, {"build", "card"}),
    "source film removed": (
        lambda b: (source_of(b) / FILMS / "00021.jpg").unlink(),
        {"build", "card"},
    ),
    "output deleted": (lambda b: (b / "manifest.parquet").unlink(), {"build"}),
    "output rewritten": (lambda b: (b / "curation.json").write_bytes(b"{}"), {"build"}),
    "shard deleted": (
        lambda b: next((b / "dataset" / "data").glob("test-*.parquet")).unlink(),
        {"build"},
    ),
    "card deleted": (lambda b: (b / "dataset" / "README.md").unlink(), {"card"}),
    "source record rewritten": (
        lambda b: (b / "work" / "source.json").write_text("{}"),
        {"download"},
    ),
}


@pytest.mark.parametrize("change", CHANGES)
def test_a_changed_input_or_output_runs_again(built, change: str):
    build, commands = built
    alter, expected = CHANGES[change]
    alter(build)

    said = run_all(commands)

    assert {name for name, text in said.items() if UP_TO_DATE not in text} == expected
    assert (build / "manifest.parquet").is_file() and (build / "dataset" / "README.md").is_file()
    assert {n for n, t in run_all(commands).items() if UP_TO_DATE not in t} == set()


@pytest.mark.parametrize(
    ("command", "extra"),
    [
        ("build", ["--seed", "1"]),
        ("card", ["--revision", "abc123"]),
        ("agreement", ["--seed", "3"]),
    ],
)
def test_a_changed_parameter_runs_again(built, command: str, extra: list[str]):
    _, commands = built
    result = pericurate(*commands[command], *extra)
    assert result.exit_code == 0, result.output
    assert UP_TO_DATE not in result.stderr
    again = pericurate(*commands[command], *extra)
    assert UP_TO_DATE in again.stderr


def test_force_runs_again(built):
    build, commands = built
    before = (build / "manifest.parquet").stat().st_mtime_ns
    result = pericurate(*commands["build"], "--force")
    assert result.exit_code == 0 and UP_TO_DATE not in result.stderr
    assert (build / "manifest.parquet").stat().st_mtime_ns != before


def test_changed_code_runs_again(built, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    _, commands = built
    module = tmp_path / "module.py"
    module.write_text("VALUE = 1\n")
    monkeypatch.setattr(fingerprint, "code_files", lambda: [module])
    said = run_all(commands)  # the code is not the one recorded: everything runs
    assert not any(UP_TO_DATE in text for text in said.values())
    assert all(UP_TO_DATE in text for text in run_all(commands).values())

    module.write_text("VALUE = 2\n")
    said = run_all(commands)
    assert not any(UP_TO_DATE in text for text in said.values())


def test_the_code_is_every_project_source_file_and_the_lock():
    names = {(p.parent.name, p.name) for p in fingerprint.code_files()}
    assert {
        ("cli", "app.py"),
        ("chain", "runner.py"),
        ("drawing", "render.py"),
        ("cards", "licenses.py"),
        ("publish", "card.py"),
        ("splits", "assign.py"),
        ("periapical_lesions", "scoring.py"),
    } <= names
    assert any(name == "uv.lock" for _, name in names)
    assert any(n.startswith("numpy-") for n in fingerprint.installed_distributions())


def test_a_zip_source_changed_or_touched_runs_again(tmp_path: Path):
    folder = folder_source(tmp_path)
    archive = tmp_path / "source.zip"

    def write_zip(skip: str = "") -> None:
        with zipfile.ZipFile(archive, "w") as zf:
            for path in sorted(folder.rglob("*")):
                if path.is_file() and path.name != skip:
                    zf.write(path, path.relative_to(folder).as_posix())
        os.utime(archive, ns=(OLD_NS, OLD_NS))

    write_zip()
    build = tmp_path / "build"
    commands = steps(archive, build)
    run_all(commands)
    assert all(UP_TO_DATE in text for text in run_all(commands).values())

    touch(archive)
    said = run_all(commands)
    assert {n for n, t in said.items() if UP_TO_DATE not in t} == {"download"}

    (tmp_path / "source.lock.json").unlink()  # accept a new archive: one film fewer
    write_zip(skip="00021.jpg")
    said = run_all(commands)
    assert {n for n, t in said.items() if UP_TO_DATE not in t} == {"download", "build", "card"}


def test_a_source_modified_just_before_the_run_is_not_trusted(tmp_path: Path):
    """Racy rule: a file modified within 2 s of the run could be rewritten again at the same
    size and time; no fingerprint is written, so the next run runs again."""
    source = folder_source(tmp_path)
    (source / FILMS / "00011.jpg").write_bytes(film_bytes(98))  # modified now
    commands = steps(source, tmp_path / "build")
    run_all(commands)
    said = run_all(commands)
    assert UP_TO_DATE not in said["build"]
    assert UP_TO_DATE in said["card"] and UP_TO_DATE in said["agreement"]


def test_a_damaged_fingerprint_only_costs_a_run(built):
    build, commands = built
    (build / "work" / "build.fingerprint").write_text('{"format": ')
    result = pericurate(*commands["build"])
    assert result.exit_code == 0, result.output
    assert UP_TO_DATE not in result.stderr
    assert UP_TO_DATE in pericurate(*commands["build"]).stderr


def _installed(monkeypatch: pytest.MonkeyPatch, folder: Path, *distributions: str) -> None:
    """Distributions appear installed: their ``.dist-info`` folders on ``sys.path``."""
    for name in distributions:
        (folder / f"{name}.dist-info").mkdir(parents=True)
    monkeypatch.syspath_prepend(str(folder))


def test_the_runtime_packages_are_the_locked_dependencies_without_dev_tools_or_extras():
    names = fingerprint.locked_runtime_names(fingerprint.LOCK.read_bytes())
    assert {"numpy", "pyarrow", "jinja2", "periapical-lesions", "typer"} <= set(names)
    assert not {"pytest", "ruff", "mypy", "ray", "prime", "dental-assistant-agent"} & set(names)


def test_a_dev_tool_installed_or_removed_changes_no_key(tmp_path: Path, monkeypatch):
    before = fingerprint.code_digest()
    _installed(monkeypatch, tmp_path / "dev", "mypy-0.0.1", "pytest_xdist-0.0.1", "Ruff-0.0.1")
    assert fingerprint.code_digest() == before


def test_a_runtime_dependency_of_another_version_changes_the_key(tmp_path: Path, monkeypatch):
    before = fingerprint.code_digest()
    _installed(monkeypatch, tmp_path / "runtime", "Pillow-0.0.1")
    assert fingerprint.code_digest() != before


def test_make_splits_after_make_test_is_a_no_op(built, tmp_path: Path, monkeypatch):
    """``make test`` installs the dev tools into the environment ``make splits`` runs in."""
    _, commands = built
    _installed(monkeypatch, tmp_path / "dev", "mypy-0.0.1", "pytest-0.0.1")
    assert all(UP_TO_DATE in text for text in run_all(commands).values())
