"""`make setup` (the first half of `make splits`) on a machine whose Python refuses
`pip install` into itself (PEP 668, as Debian's and Ubuntu's do) and that has no uv: the
Makefile installs uv into a private venv, then sets the project up with it.

No container is needed: the test makes a stand-in "system Python" (the running interpreter's
own binary beside links to its standard library, plus an ``EXTERNALLY-MANAGED`` file), checks
that its pip does refuse, puts it alone on PATH with the few tools make's recipes call, and
runs the Makefile of a throwaway copy of the project. uv is fetched from PyPI; the locked
packages come from uv's cache when it is warm.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MARKER = "EXTERNALLY-MANAGED"
# What make's recipes and the tools they start call; uv is deliberately not among them.
TOOLS = ("make", "bash", "sh", "env", "touch", "id", "cat", "rm", "mkdir", "ls", "uname")


def refusing_python(folder: Path) -> Path:
    """A ``python3`` that pip refuses to install into: the base interpreter when it already is
    externally managed, else its binary copied beside links to its standard library."""
    binary = Path(os.path.realpath(getattr(sys, "_base_executable", sys.executable)))
    stdlib = Path(sysconfig.get_path("stdlib"))
    bin_dir = folder / "bin"
    bin_dir.mkdir(parents=True)
    if (stdlib / MARKER).is_file():
        (bin_dir / "python3").symlink_to(binary)
        return bin_dir / "python3"
    library = folder / "lib" / stdlib.name
    library.mkdir(parents=True)
    for entry in stdlib.iterdir():
        (library / entry.name).symlink_to(entry)
    (library / MARKER).write_text(
        "[externally-managed]\nError=A stand-in for a system Python (pericurate's tests).\n"
    )
    shutil.copy2(binary, bin_dir / "python3")
    return bin_dir / "python3"


def tool_path(folder: Path) -> Path:
    """A folder holding links to ``TOOLS`` only."""
    folder.mkdir()
    for tool in TOOLS:
        found = shutil.which(tool)
        if found:
            (folder / tool).symlink_to(found)
    return folder


def project_copy(folder: Path) -> Path:
    """The tracked files of the project as they are in the working tree."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, folder / name)
    return folder


def pypi_reachable() -> bool:
    try:
        with urllib.request.urlopen("https://pypi.org/simple/uv/", timeout=20):
            return True
    except OSError:
        return False


@pytest.mark.skipif(
    shutil.which("git") is None or shutil.which("make") is None, reason="no git/make"
)
def test_make_setup_works_where_pip_refuses_and_uv_is_missing(tmp_path):
    if not pypi_reachable():
        pytest.skip("PyPI is not reachable, so uv cannot be installed: bootstrap not tested")
    python = refusing_python(tmp_path / "system")
    refused = subprocess.run(
        [python, "-m", "pip", "install", "--dry-run", "--no-index", "uv"],
        capture_output=True,
        text=True,
    )
    assert refused.returncode != 0 and "externally-managed-environment" in refused.stderr
    path = f"{python.parent}{os.pathsep}{tool_path(tmp_path / 'tools')}"
    assert shutil.which("uv", path=path) is None
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("UV", "PYTHON", "PYENV"))}
    # An activated venv that is not the project's: uv would warn about it on every command.
    env = {**keep, "PATH": path, "VIRTUAL_ENV": str(tmp_path / "other-venv")}
    project = project_copy(tmp_path / "project")
    uv_home = tmp_path / "uv-home"

    made = subprocess.run(
        ["make", "setup", f"UV_HOME={uv_home}"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )

    said = made.stdout + made.stderr
    assert made.returncode == 0, said
    assert f"uv not found: installing it into {uv_home}" in said
    assert (uv_home / "bin" / "uv").is_file()
    assert "externally-managed" not in said and "does not match" not in said, said
    checked = subprocess.run(
        [
            project / ".venv" / "bin" / "python",
            "-c",
            "import curation.cli.app, curation.publish.card",
        ],
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stderr
