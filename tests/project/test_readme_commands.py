"""Every command README.md prints works as printed right after ``make splits`` in a fresh clone.

The fenced blocks are read from the README itself, in a folder laid out as ``make splits``
leaves it: ``build/`` (the sample's build, its source lock and extracted source),
``configs/``, and ``.venv/bin/`` resolving to this interpreter's scripts; no ``uv`` on PATH.

- a ``bash`` line runs with bash as printed, the Hub client pointed at the loopback stand-in;
- a line ending ``# needs: ...`` (the internet, docker, a model server) cannot run here and is
  checked as far as it goes without that: its options parsed by the command line itself
  (``vf-eval`` and ``dental-assistant-eval`` resolve them with ``--dry-run``), its program and
  files present; the audit of a Hub dataset also runs, against the sample pushed to the
  stand-in, with OWNER/NAME@REVISION naming what was pushed;
- a ``make`` line is the set-up or the whole suite, so it is checked with ``make -n`` (the
  target and its variables exist, with what it would run);
- a ``python`` block runs with this interpreter, a ``toml`` block is a decisions file that
  must name films of the sample.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import click
import pyarrow.parquet as pq
import pytest
import typer
from typer.testing import CliRunner

from curation.cli.app import app
from curation.cli.next_steps import next_steps
from curation.decisions.decisions import DECISIONS_NAME, read_decisions
from curation.push.hub import EVAL_CONFIG, PINNED_FILE
from tests.hub_standin import WRITE_TOKEN, HubStandIn, hub_standin, pushable_copy

__all__ = ["hub_standin"]
ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
NEEDS = re.compile(r"\s+#\s*needs:\s*(?P<needs>.+)$")
WATCHDOG_SECONDS = 600


@dataclass(frozen=True)
class Command:
    line: str  # as printed, continuation lines joined, without its comment
    needs: str | None  # what it needs that a test cannot have, from its `# needs:` tag


def fenced_blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", text, flags=re.MULTILINE | re.DOTALL)


def shell_commands(text: str) -> list[Command]:
    """Each command of the README's ``bash`` blocks, continuation lines joined."""
    commands = []
    for block in fenced_blocks(text, "bash"):
        for line in block.replace("\\\n", " ").splitlines():
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            tag = NEEDS.search(line)
            words = shlex.split(line, comments=True)
            commands.append(Command(shlex.join(words), tag["needs"] if tag else None))
    return commands


README = (ROOT / "README.md").read_text(encoding="utf-8")
COMMANDS = shell_commands(README)


@pytest.fixture(scope="module")
def clone(sample_build: Path, sample_source, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder as ``make splits`` leaves a fresh clone: the sample built into ``build/``."""
    folder = tmp_path_factory.mktemp("clone")
    build, lock = pushable_copy(sample_build, folder)
    shutil.move(lock, build / "source.lock.json")
    extracted = sample_source.root.parents[1]
    assert extracted.name == "extracted"
    (build / "extracted").symlink_to(extracted, target_is_directory=True)
    shutil.copytree(ROOT / "configs", folder / "configs")
    (folder / ".venv").symlink_to(sys.prefix, target_is_directory=True)  # this venv
    assert (folder / ".venv" / "bin").resolve() == BIN.resolve()
    return folder


def clone_env(clone: Path, hub: HubStandIn) -> dict[str, str]:
    """A user's shell: no uv on PATH, no token, the Hub client at the loopback stand-in."""
    path = [p for p in os.environ["PATH"].split(os.pathsep) if not (Path(p) / "uv").exists()]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "VIRTUAL_ENV", "UV"))}
    env |= {"PATH": os.pathsep.join(path), "HF_ENDPOINT": hub.url, "HF_HOME": str(clone / "hf")}
    return env


def test_the_readme_has_commands_of_each_kind():
    assert any(c.line.startswith(".venv/bin/pericurate ") and not c.needs for c in COMMANDS)
    assert any(c.line.startswith("make ") for c in COMMANDS)
    assert any(c.needs for c in COMMANDS)
    assert fenced_blocks(README, "python") and fenced_blocks(README, "toml")
    assert not any(c.line.startswith("uv ") for c in COMMANDS), "uv is not on PATH there"


@pytest.mark.parametrize(
    "command", [c for c in COMMANDS if not c.needs and not c.line.startswith("make ")],
    ids=lambda c: c.line[:60],
)  # fmt: skip
def test_each_command_runs_as_printed(command: Command, clone: Path, hub_standin: HubStandIn):
    done = subprocess.run(
        ["bash", "-c", command.line], cwd=clone, env=clone_env(clone, hub_standin),
        capture_output=True, text=True, timeout=WATCHDOG_SECONDS,
    )  # fmt: skip
    assert done.returncode == 0, f"{command.line}\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
    if " push " in command.line:  # a dry run: it names the Hub it would send to, sends nothing
        assert f"at {hub_standin.url}" in done.stdout
        assert not hub_standin.requests


@pytest.mark.parametrize(
    "command", [c for c in COMMANDS if c.line.startswith("make ")], ids=lambda c: c.line[:60]
)
def test_each_make_line_names_a_target_and_variables_that_exist(command: Command):
    argv = shlex.split(command.line)
    done = subprocess.run(
        ["make", "-n", *argv[1:]], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    source = next((w.split("=", 1)[1] for w in argv if w.startswith("SOURCE=")), None)
    if source:
        assert f'splits "{source}"' in done.stdout


def _pericurate_parses(argv: list[str]) -> None:
    """The options parsed by the command line itself, without running the command."""
    group = typer.main.get_command(app)
    assert isinstance(group, click.Group)
    command = group.get_command(click.Context(group), argv[0])
    assert command is not None, argv[0]
    command.make_context(argv[0], argv[1:])


@pytest.mark.parametrize(
    "command", [c for c in COMMANDS if c.needs and not c.line.startswith("make ")],
    ids=lambda c: c.line[:60],
)  # fmt: skip
def test_a_line_that_needs_more_than_a_test_has_parses(
    command: Command, clone: Path, hub_standin: HubStandIn
):
    argv = shlex.split(command.line)
    program = clone / argv[0]
    assert argv[0].startswith(".venv/bin/") and program.is_file(), argv[0]
    for word in argv[1:]:
        if word.startswith(("configs/", "environments/")):
            assert (clone / word).exists() or (ROOT / word).exists(), word
    if program.name == "pericurate":
        _pericurate_parses(argv[1:])
    elif program.name in ("vf-eval", "dental-assistant-eval"):
        out = clone / "dry-run" / program.name
        done = subprocess.run(
            [*argv, "--dry-run", "-o", str(out)], cwd=clone, env=clone_env(clone, hub_standin),
            capture_output=True, text=True, timeout=WATCHDOG_SECONDS,
        )  # fmt: skip
        resolved = list(out.glob("*/configs/resolved/eval.json"))
        assert resolved, f"{command.line}\n{done.stderr[-3000:]}"


def test_the_python_example_runs_as_printed(clone: Path, hub_standin: HubStandIn):
    for block in fenced_blocks(README, "python"):
        done = subprocess.run(
            [str(clone / ".venv/bin/python"), "-c", block], cwd=clone,
            env=clone_env(clone, hub_standin), capture_output=True, text=True,
            timeout=WATCHDOG_SECONDS,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        assert done.stdout.strip()


def test_the_decisions_example_names_films_of_the_sample(clone: Path, tmp_path: Path):
    (block,) = fenced_blocks(README, "toml")
    build = tmp_path / "build"
    build.mkdir()
    (build / DECISIONS_NAME).write_text(block)
    decisions = read_decisions(build)
    assert decisions.entries
    films = pq.read_table(clone / "build" / "manifest.parquet", columns=["film_id"])
    decisions.check_films(set(films["film_id"].to_pylist()))


def test_the_what_now_table_prints_the_readmes_commands(clone: Path, monkeypatch):
    """``pericurate next`` (what ``make splits`` ends with) and the README's table agree."""
    monkeypatch.chdir(clone)
    monkeypatch.setattr(sys, "executable", str(clone / ".venv" / "bin" / "python"))  # as run there
    table = README.split("## What you get")[1].split("\n## ")[0]
    printed = dict(re.findall(r"^\| ([a-z, ]+) \| `([^`]+)`", table, flags=re.MULTILINE))
    for step in next_steps(Path("build")):
        if step.where.startswith(".venv/bin/"):
            assert printed[step.what] == step.where
            assert any(c.line == step.where for c in COMMANDS), step.where


def test_the_hub_audit_line_runs_against_the_stand_in_with_its_placeholders_filled(
    sample_build: Path, clone: Path, hub_standin: HubStandIn, tmp_path: Path, monkeypatch
):
    """The audit of a Hub dataset, on the sample pushed to the loopback stand-in: the line as
    printed, with OWNER/NAME@REVISION naming what was pushed."""
    (command,) = [c for c in COMMANDS if "OWNER/NAME@REVISION" in c.line]
    build, lock = pushable_copy(sample_build, tmp_path)
    root = tmp_path / "root"
    for relative in (PINNED_FILE, EVAL_CONFIG):
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / relative, root / relative)
    monkeypatch.setenv("HF_TOKEN", WRITE_TOKEN)
    monkeypatch.setenv("HF_ENDPOINT", hub_standin.url)
    repo = "curator/readme-audit"
    pushed = CliRunner().invoke(
        app, ["push", "--repo", repo, "--build", str(build), "--lock", str(lock),
              "--repo-root", str(root), "--no-build-env", "--allow-synthetic"],
    )  # fmt: skip
    assert pushed.exit_code == 0, pushed.output
    sha = hub_standin.repos[repo].branches["main"]
    line = command.line.replace("OWNER/NAME@REVISION", f"{repo}@{sha}")
    done = subprocess.run(
        ["bash", "-c", line], cwd=clone, env=clone_env(clone, hub_standin),
        capture_output=True, text=True, timeout=WATCHDOG_SECONDS,
    )  # fmt: skip
    assert done.returncode == 0, f"{line}\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
    said = " ".join((done.stdout + done.stderr).split())
    assert "hint found" in said and "report:" in said, said[-2000:]
