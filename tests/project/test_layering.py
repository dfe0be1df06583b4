"""The layering contracts (``[tool.importlinter]`` in ``pyproject.toml``, run by ``make test``)
hold on the code, and each breaks when a forbidden import is planted in a copy of it."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# What the contracts read, copied; the tests stay where they are (the contracts name them as
# a root package, found through the project's own path entry).
COPIED = ("curation", "splits", "cards", "support", "bench")
BENCH_CORPORA = ROOT / "bench" / "corpus"  # gitignored: what `make bench` writes
CONTRACTS = {
    c["id"]: c["name"]
    for c in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"][
        "contracts"
    ]
}

# (contract id, file in the copy, line appended to it)
PLANTED = {
    "a low floor imports a high one": (
        "floors",
        "curation/core/records.py",
        "import curation.cli.app",
    ),
    "two rooms on one floor": ("floors", "curation/publish/card.py", "import curation.review"),
    "a room on no floor": ("floors", "curation/unplaced/__init__.py", "import curation.core"),
    "the toolkit imports an environment": (
        "toolkit-alone",
        "curation/publish/agreement.py",
        "import periapical_lesions.scoring",
    ),
    "the toolkit imports the bench": (
        "toolkit-alone",
        "curation/core/atomic.py",
        "import bench.margins.same_picture",
    ),
    "splits imports the toolkit": (
        "splits-cards-leaves",
        "splits/assign.py",
        "import curation.core.records",
    ),
    "a sample room imports the archive above it": (
        "sample-floors",
        "curation/sample/plants/copies.py",
        "import curation.sample.archive",
    ),
    "the drawing imports the sample that files it": (
        "floors",
        "curation/drawing/render.py",
        "import curation.sample.planner",
    ),
    "a leak check imports the audit above it": (
        "floors",
        "curation/leaks/turned.py",
        "import curation.audit.report",
    ),
    "the rows read import a check": (
        "leaks-floors",
        "curation/leaks/target.py",
        "import curation.leaks.leakage",
    ),
    "what the bench's rooms share imports its entry": (
        "bench-floors",
        "bench/common/measure.py",
        "import bench.run",
    ),
    "the bench imports the tests": (
        "bench-not-tests",
        "bench/margins/same_picture.py",
        "import tests.project.test_layering",
    ),
}


def lint_imports(folder: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` of this environment run in ``folder``, which it reads before the
    installed project (it puts the working folder first on the path)."""
    command = Path(sys.executable).with_name("lint-imports")
    return subprocess.run(
        [str(command), "--no-cache"], cwd=folder, capture_output=True, text=True, timeout=300
    )


def _not_source(folder: str, names: list[str]) -> set[str]:
    """What the copy leaves out: everything but Python sources and the folders holding them,
    and a checkout's own environments and corpora (``bench/peers/env/.venv``; ``bench/corpus``,
    where ``make bench`` writes thousands of folders of films and no code)."""
    return {
        name
        for name in names
        if name.startswith(".")
        or name == "__pycache__"
        or Path(folder, name) == BENCH_CORPORA
        or (not name.endswith(".py") and not (Path(folder) / name).is_dir())
    }


def copy_of_the_project(into: Path) -> Path:
    for name in COPIED:
        shutil.copytree(ROOT / name, into / name, ignore=_not_source)
    shutil.copy(ROOT / "pyproject.toml", into / "pyproject.toml")
    return into


def status(output: str, contract: str) -> str:
    """``KEPT`` or ``BROKEN``: what the report's summary says of ``contract``."""
    flat = " ".join(output.split())
    start = flat.index(CONTRACTS[contract]) + len(CONTRACTS[contract])
    return flat[start:].split()[0]


def test_the_contracts_hold_on_the_code(tmp_path: Path) -> None:
    result = lint_imports(copy_of_the_project(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert all(status(result.stdout, contract) == "KEPT" for contract in CONTRACTS)


@pytest.mark.parametrize("case", PLANTED)
def test_a_planted_forbidden_import_breaks_its_contract(tmp_path: Path, case: str) -> None:
    contract, file, line = PLANTED[case]
    planted = copy_of_the_project(tmp_path) / file
    planted.parent.mkdir(parents=True, exist_ok=True)
    planted.write_text((planted.read_text() if planted.exists() else "") + f"\n{line}\n")
    result = lint_imports(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    # An import may break more than its own contract: the bench imported from the core also
    # reaches the higher floors through the bench.
    assert status(result.stdout, contract) == "BROKEN", result.stdout
