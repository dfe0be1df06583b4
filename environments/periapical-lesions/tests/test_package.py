"""The built package: its version, its licences and what installing it pulls in."""

import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

PACKAGE = Path(__file__).parents[1]


def test_wheel_carries_licences_and_keeps_the_agent_stack_optional(tmp_path: Path) -> None:
    """Built by this interpreter's own frontend and backend (the `test` extra): no uv on PATH,
    no network."""
    build = [sys.executable, "-m", "build", "--no-isolation", "--wheel"]
    subprocess.run(
        [*build, "--outdir", str(tmp_path), str(PACKAGE)],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("periapical_lesions-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        info = next(n for n in names if n.endswith(".dist-info/METADATA")).rsplit("/", 1)[0]
        metadata = Parser().parsestr(archive.read(f"{info}/METADATA").decode())
        licence = archive.read(f"{info}/licenses/licenses/LICENSE").decode()
        notice = archive.read(f"{info}/licenses/licenses/NOTICE").decode()
    assert metadata["Version"] == "0.3.4"
    assert metadata["License-Expression"] == "Apache-2.0"
    assert sorted(metadata.get_all("License-File")) == ["licenses/LICENSE", "licenses/NOTICE"]
    assert "Apache License" in licence and "Version 2.0, January 2004" in licence
    for needed in ("CC BY 4.0", "Do et al. (2024)", "doi:10.17632/kx52tk2ddj.3"):
        assert needed in notice, needed
    required = metadata.get_all("Requires-Dist")
    unconditional = [r for r in required if "extra ==" not in r]
    assert unconditional == ["numpy>=2.1"]
    assert any(r.startswith("verifiers==0.4.0") and "extra == 'agent'" in r for r in required)
    # The tests' own extra, like dental-assistant-agent's: the agent stack, pytest, Pillow.
    assert {"agent", "test"} <= set(metadata.get_all("Provides-Extra"))
    for needed in ("verifiers==0.4.0", "pyarrow", "pytest>=8.3", "pillow>=11.0"):
        assert any(r.startswith(needed) and "extra == 'test'" in r for r in required), needed
