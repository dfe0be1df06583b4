"""What can be checked of the sandbox image without building it (docker cannot build here):
every version is pinned and agrees with verifiers 0.4.0 and the eval config, the harness is
baked in where verifiers looks for it, so a rollout fetches nothing, and the build script tags
the image the config runs."""

import json
import os
import re
import subprocess
import tomllib
from pathlib import Path

from verifiers.v1.harnesses.claude_code.harness import ACP_VERSION, CLAUDE_ACP_DIR
from verifiers.v1.harnesses.node import NODE_BIN_DIR, NODE_VERSION

ROOT = Path(__file__).parents[3]
IMAGE_DIR = ROOT / "scripts" / "periapical-lesions"
CONFIG = tomllib.loads((ROOT / "configs" / "periapical-lesions" / "eval.toml").read_text())


def dockerfile() -> str:
    """The Dockerfile with its ARG defaults substituted, as docker would build it."""
    text = (IMAGE_DIR / "Dockerfile").read_text()
    defaults = dict(re.findall(r"^ARG (\w+)=(\S+)$", text, re.MULTILINE))
    return re.sub(r"\$\{(\w+)\}", lambda m: defaults.get(m[1], m[0]), text)


def test_versions_agree_with_verifiers_and_the_config() -> None:
    text = (IMAGE_DIR / "Dockerfile").read_text()
    args = dict(re.findall(r"^ARG (\w+)=(\S+)$", text, re.MULTILINE))
    harness = CONFIG["env"]["agent"]["harness"]
    assert args == {
        "NODE_VERSION": NODE_VERSION,
        "CLAUDE_CODE_VERSION": harness["version"],
        "ACP_VERSION": ACP_VERSION,
    }
    package = json.loads((IMAGE_DIR / "harness" / "package.json").read_text())
    assert package["dependencies"] == {
        "@anthropic-ai/claude-code": harness["version"],
        "@agentclientprotocol/claude-agent-acp": ACP_VERSION,
    }


def test_lockfile_pins_every_package_by_integrity() -> None:
    lock = json.loads((IMAGE_DIR / "harness" / "package-lock.json").read_text())
    packages = {k: v for k, v in lock["packages"].items() if k}
    assert packages and all(v.get("integrity", "").startswith("sha512-") for v in packages.values())
    harness = CONFIG["env"]["agent"]["harness"]
    claude = packages["node_modules/@anthropic-ai/claude-code"]["version"]
    acp = packages["node_modules/@agentclientprotocol/claude-agent-acp"]["version"]
    assert (claude, acp) == (harness["version"], ACP_VERSION)


def test_harness_is_baked_where_verifiers_skips_installing_it() -> None:
    text = dockerfile()
    acp_dir = CLAUDE_ACP_DIR.format(
        version=CONFIG["env"]["agent"]["harness"]["version"], acp_version=ACP_VERSION
    )
    assert f"WORKDIR {acp_dir}/packages" in text and "touch ../.ready" in text
    assert f"COPY --from=harness {acp_dir} {acp_dir}" in text
    assert f"COPY --from=harness /usr/local/bin/node {NODE_BIN_DIR}/node" in text
    assert f"FROM node:{NODE_VERSION}-" in text
    assert "npm ci" in text and "npm install" not in text
    assert re.search(r"apt-get install .*\bcurl\b", text)  # verifiers' node check needs curl


def test_nothing_is_fetched_when_the_image_runs() -> None:
    text = dockerfile()
    assert not re.search(r"^(CMD|ENTRYPOINT)\b", text, re.MULTILINE)
    pip = re.findall(r"pip install (.*)", text)
    assert pip and all(re.fullmatch(r'"[\w-]+==[\w.]+"', p) for p in pip[0].split())


def test_build_script_tags_the_image_the_config_runs(tmp_path: Path) -> None:
    fake = tmp_path / "docker"
    fake.write_text('#!/bin/sh\necho "$@"\n')
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path}:/usr/bin:/bin"}
    result = subprocess.run(
        [str(IMAGE_DIR / "build-image.sh"), "--pull"], env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    image = CONFIG["env"]["agent"]["runtime"]["image"]
    assert result.stdout.split() == ["build", "-t", image, "--pull", str(IMAGE_DIR)]


def test_build_script_without_docker_says_so_in_one_line(tmp_path: Path) -> None:
    for tool in ("sed", "dirname"):  # the script's own tools, and no docker
        (tmp_path / tool).symlink_to(f"/usr/bin/{tool}")
    env = {**os.environ, "PATH": str(tmp_path)}
    result = subprocess.run(
        ["/bin/bash", str(IMAGE_DIR / "build-image.sh")], env=env, capture_output=True, text=True
    )
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "docker is not installed" in result.stderr
