"""The driver's memory bench builds cold unless asked to build again: a build left in its
scratch folder by an earlier run was built again, its caches read, and its figures were a
warm build's under a cold build's name. And it reports no build whose traced driver forked:
a forked worker could wait for ever on tracemalloc's lock (the tiny run of every bench part,
``test_bench_parts``, builds with the real child and meets this check)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.scale import driver_slope


@pytest.fixture
def forks() -> list[int]:
    """How many times each stand-in child says its traced driver forked (a test may change it)."""
    return [0]


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, forks: list[int]) -> list[bool]:
    """Whether each measured build found its folder's cache, with the corpus and the child
    replaced by stand-ins (no build is run)."""
    found: list[bool] = []

    class Child:
        @property
        def stdout(self) -> str:
            return json.dumps({"source_files": 1, "steps": [], "driver_forks": forks[0]})

    def run_measured(command: list[str]) -> Child:
        build = Path(command[command.index("--one") + 2])
        found.append((build / "cache" / "facts.parquet").exists())
        return Child()

    monkeypatch.setattr(driver_slope, "corpus_zip", lambda n, **_: tmp_path / f"corpus-{n}.zip")
    monkeypatch.setattr(driver_slope, "corpus_source", lambda archive: None)
    monkeypatch.setattr(driver_slope, "run_measured", run_measured)
    monkeypatch.setattr(driver_slope, "child_json", lambda child: json.loads(child.stdout))
    return found


@pytest.mark.parametrize("warm", [False, True])
def test_a_kept_build_is_built_again_only_when_asked(tmp_path, built, warm):
    scratch = tmp_path / "scratch"
    (scratch / "build-40" / "cache").mkdir(parents=True)
    (scratch / "build-40" / "cache" / "facts.parquet").write_bytes(b"an earlier run's cache")
    driver_slope.measure([40], scratch, warm=warm)
    assert built == [warm]


def test_a_build_whose_traced_driver_forked_is_refused(tmp_path, built, forks):
    forks[0] = 1
    with pytest.raises(driver_slope.TracedFork, match="forked its driver"):
        driver_slope.measure([40], tmp_path / "scratch")
