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


FAKE_DOCKER = """#!/bin/sh
echo "$@"
while [ $# -gt 0 ]; do
    if [ "$1" = --iidfile ]; then printf 'sha256:%064d' 7 > "$2"; fi
    shift
done
"""
"""Prints its arguments and, like docker build, writes an image id to --iidfile."""


def image_tree(tmp_path: Path, dockerfile: str | None = None) -> Path:
    """A copy of the build script, the Dockerfile and the config, laid out as in the repo."""
    scripts = tmp_path / "repo" / "scripts" / "periapical-lesions"
    scripts.mkdir(parents=True)
    for name in ("build-image.sh", "Dockerfile"):
        (scripts / name).write_bytes((IMAGE_DIR / name).read_bytes())
    (scripts / "build-image.sh").chmod(0o755)
    if dockerfile is not None:
        (scripts / "Dockerfile").write_text(dockerfile)
    configs = tmp_path / "repo" / "configs" / "periapical-lesions"
    configs.mkdir(parents=True)
    shipped = ROOT / "configs" / "periapical-lesions" / "eval.toml"
    (configs / "eval.toml").write_bytes(shipped.read_bytes())
    return scripts


def fake_docker_path(tmp_path: Path) -> dict[str, str]:
    fake = tmp_path / "bin" / "docker"
    fake.parent.mkdir()
    fake.write_text(FAKE_DOCKER)
    fake.chmod(0o755)
    return {**os.environ, "PATH": f"{fake.parent}:/usr/bin:/bin"}


def test_build_script_tags_the_image_the_config_runs_and_records_its_id(tmp_path: Path) -> None:
    scripts = image_tree(tmp_path)
    result = subprocess.run(
        [str(scripts / "build-image.sh"), "--pull"],
        env=fake_docker_path(tmp_path), capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    image = CONFIG["env"]["agent"]["runtime"]["image"]
    argv = result.stdout.splitlines()[0].split()
    assert argv[:3] == ["build", "-t", image] and argv[3] == "--iidfile"
    assert argv[5:] == ["--pull", str(scripts)]
    record = (scripts / "sandbox-image.txt").read_text().splitlines()
    assert f"image {image}" in record and f"id sha256:{7:064d}" in record
    bases = [line.removeprefix("base ") for line in record if line.startswith("base ")]
    assert bases == re.findall(r"^FROM (\S+)", dockerfile(), re.MULTILINE)


def test_every_base_image_is_pinned_by_digest() -> None:
    bases = re.findall(r"^FROM (\S+)", dockerfile(), re.MULTILINE)
    assert len(bases) == 2
    assert all(re.fullmatch(r"[\w./:-]+@sha256:[0-9a-f]{64}", base) for base in bases), bases
    assert bases[0].startswith(f"node:{NODE_VERSION}-") and bases[1].startswith("python:3.11-")
    text = dockerfile()
    assert f'test "$(node --version)" = "v{NODE_VERSION}"' in text  # the digest is that release
    assert "sys.version_info[:2] == (3, 11)" in text


def test_build_script_refuses_an_unpinned_base(tmp_path: Path) -> None:
    text = (IMAGE_DIR / "Dockerfile").read_text()
    unpinned = re.sub(r"^(FROM python:\S+?)@sha256:[0-9a-f]{64}", r"\1", text, flags=re.MULTILINE)
    assert unpinned != text
    scripts = image_tree(tmp_path, unpinned)
    result = subprocess.run(
        [str(scripts / "build-image.sh")],
        env=fake_docker_path(tmp_path), capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "not pinned by digest" in result.stderr
    assert not (scripts / "sandbox-image.txt").exists()


def test_build_script_without_docker_says_so_in_one_line(tmp_path: Path) -> None:
    for tool in ("sed", "dirname"):  # the script's own tools, and no docker
        (tmp_path / tool).symlink_to(f"/usr/bin/{tool}")
    env = {**os.environ, "PATH": str(tmp_path)}
    result = subprocess.run(
        ["/bin/bash", str(IMAGE_DIR / "build-image.sh")], env=env, capture_output=True, text=True
    )
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "docker is not installed" in result.stderr
