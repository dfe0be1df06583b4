"""The built wheel is what the published README promises: version 1.0.0, MIT licence with
its text, and the commands this README maps the published ones to."""

from __future__ import annotations

import os
import subprocess
import zipfile
from email.parser import Parser
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]


def test_wheel_is_version_1_0_0_under_mit_with_its_licence_text(tmp_path):
    uv = os.environ.get("UV", "uv")  # `uv run` names its own binary here
    build = [uv, "build", "--wheel", "--out-dir", str(tmp_path), str(PACKAGE)]
    done = subprocess.run(build, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    (wheel,) = tmp_path.glob("*.whl")
    assert wheel.name == "dental_assistant_agent-1.0.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as archive:
        info = "dental_assistant_agent-1.0.0.dist-info"
        metadata = Parser().parsestr(archive.read(f"{info}/METADATA").decode())
        licence = archive.read(f"{info}/licenses/LICENSE").decode()
        entry_points = archive.read(f"{info}/entry_points.txt").decode()
    assert metadata["Version"] == "1.0.0"
    assert metadata["License-Expression"] == "MIT"
    assert metadata["License-File"] == "LICENSE"
    assert licence.startswith("MIT License")
    assert "prime==0.18.0; extra == 'test'" in metadata.get_all("Requires-Dist")
    assert "dental-assistant-eval = dental_assistant_agent.evaluate:main" in entry_points
