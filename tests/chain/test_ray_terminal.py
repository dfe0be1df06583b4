"""`--executor ray` keeps Ray's own messages out of the terminal: one line names the folder
where they are, and the steps' progress bars are what is shown."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hostile_films import film_bytes, voc, write_source

pytest.importorskip("ray")


def test_a_ray_run_prints_where_rays_logs_are_and_none_of_them(tmp_path: Path):
    films = {f"{i:04d}1": (film_bytes(i), voc(f"{i:04d}1")) for i in range(1, 9)}
    source = write_source(tmp_path / "source", films)
    build = tmp_path / "build"
    env = {**os.environ, "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0"}
    env.pop("RAY_ADDRESS", None)  # a local instance, started and stopped by the run
    command = [str(Path(sys.executable).parent / "pericurate")]
    fetched = subprocess.run(
        [*command, "download", str(source), "--build", str(build)], env=env, capture_output=True
    )
    assert fetched.returncode == 0, fetched.stderr

    ran = subprocess.run(
        [*command, "hash", "--build", str(build), "--executor", "ray"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )

    assert ran.returncode == 0, ran.stderr
    said = ran.stdout + ran.stderr
    (where,) = [line for line in said.splitlines() if line.startswith("Ray's logs: ")]
    assert Path(where.removeprefix("Ray's logs: ")).is_dir()
    assert "hash films" in said
    for noise in (" INFO ", " WARNING ", "streaming_executor", "Execution plan", "(raylet)"):
        assert noise not in said, said
