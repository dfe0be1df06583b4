"""The no-network rule and a working image come with the environment, not only with its
config file: a bare `vf-eval periapical-lesions -m M` resolves to the sandbox image with no
egress, and a run that switches to a runtime breaking the rule is refused in one sentence.
Resolved as vf-eval resolves them (its --dry-run writes the resolved config)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from periapical_lesions.environment import HARNESS, MAX_TURNS, SANDBOX_IMAGE
from pydantic import ValidationError
from verifiers.v1.configs.cli.eval import EvalConfig

ROOT = Path(__file__).parents[3]
CONFIGS = ROOT / "configs" / "periapical-lesions"
DOCKERFILE = ROOT / "scripts" / "periapical-lesions" / "Dockerfile"
VF_EVAL = Path(sys.executable).parent / "vf-eval"
CLI_WATCHDOG_SECONDS = 300


def resolved(*options: str, tmp_path: Path) -> subprocess.CompletedProcess:
    argv = [str(VF_EVAL), "periapical-lesions", "-m", "any/model", "--dry-run"]
    argv += ["-o", str(tmp_path / "outputs"), *options]
    return subprocess.run(
        argv, cwd=tmp_path, capture_output=True, text=True, timeout=CLI_WATCHDOG_SECONDS
    )


def resolved_agent(tmp_path: Path) -> dict:
    (written,) = (tmp_path / "outputs").glob("*/configs/resolved/eval.json")
    return json.loads(written.read_text())["env"]["agent"]


def test_a_bare_vf_eval_resolves_to_the_offline_sandbox(tmp_path: Path) -> None:
    result = resolved(tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    agent = resolved_agent(tmp_path)
    runtime = agent["runtime"]
    assert runtime["type"] == "docker" and runtime["image"] == SANDBOX_IMAGE
    assert (runtime["allow"], runtime["block"]) == ([], ["*"])
    assert agent["harness"]["id"] == "claude_code"
    assert agent["harness"]["version"] == HARNESS["version"]
    assert {"WebSearch", "WebFetch"} <= set(agent["harness"]["disabled_tools"])
    assert agent["max_turns"] == MAX_TURNS


def test_switching_to_a_runtime_with_egress_is_refused(tmp_path: Path) -> None:
    result = resolved("--env.agent.runtime.type", "prime", tmp_path=tmp_path)
    assert result.returncode != 0
    text = " ".join(result.stdout.split() + result.stderr.split()).replace("│", "")
    assert "the sandbox must have no egress" in " ".join(text.split())
    assert not list((tmp_path / "outputs").glob("*/configs/resolved/eval.json"))


def eval_config(raw: dict) -> EvalConfig:
    return EvalConfig.model_validate({**raw, "model": "any/model"})


def runtime_of(runtime: dict) -> EvalConfig:
    taskset = {"id": "periapical-lesions"}
    return eval_config({"env": {"taskset": taskset, "agent": {"runtime": runtime}}})


@pytest.mark.parametrize(
    ("runtime", "refusal"),
    [
        ({"type": "prime"}, "must have no egress"),
        ({"type": "docker", "allow": ["*"], "block": []}, "must have no egress"),
        ({"type": "docker", "allow": ["pypi.org"], "block": []}, "must have no egress"),
        ({"type": "prime", "allow": []}, "has no numpy or Pillow"),
        ({"type": "docker", "image": "python:3.11-slim"}, "has no numpy or Pillow"),
        ({"type": "apptainer"}, "cannot deny the sandbox network access"),
    ],
)
def test_a_runtime_breaking_the_rule_is_refused_in_one_sentence(
    runtime: dict, refusal: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        runtime_of(runtime)
    (error,) = caught.value.errors()
    sentence = error["msg"].removeprefix("Value error, ")
    assert sentence.startswith("periapical-lesions: ") and refusal in sentence
    assert "\n" not in sentence and ". " not in sentence and sentence.endswith(".")


@pytest.mark.parametrize(
    "runtime", [{"type": "docker", "allow": ["*"]}, {"type": "docker", "allow": ["pypi.org"]}]
)
def test_options_on_the_default_runtime_merge_onto_its_rule(runtime: dict) -> None:
    """Options for the same runtime type are merged onto the default, whose `block = ["*"]`
    keeps every destination out (verifiers: any "*" in block means framework-only)."""
    merged = runtime_of(runtime).env.agent.runtime
    assert (merged.allow, merged.block, merged.image) == ([], ["*"], SANDBOX_IMAGE)


def test_runtimes_keeping_the_rule_are_accepted() -> None:
    with pytest.raises(ValidationError):  # prime's default egress is open: it must be said
        runtime_of({"type": "prime", "image": "registry/sandbox:1"})
    prime = runtime_of({"type": "prime", "image": "registry/sandbox:1", "allow": []})
    assert prime.env.agent.runtime.allow == []
    local = runtime_of({"type": "subprocess"})
    assert local.env.agent.runtime.type == "subprocess"


def test_the_shipped_config_and_the_defaults_agree() -> None:
    raw = tomllib.loads((CONFIGS / "eval.toml").read_text(encoding="utf-8"))
    shipped = eval_config(raw).env.agent
    bare = eval_config({"env": {"taskset": {"id": "periapical-lesions"}}}).env.agent
    assert shipped.model_dump() == bare.model_dump()
    assert raw["env"]["agent"]["runtime"]["image"] == SANDBOX_IMAGE  # build-image.sh's tag


def test_the_local_config_runs_bash_on_the_host_and_is_accepted() -> None:
    raw = tomllib.loads((CONFIGS / "eval-local.toml").read_text(encoding="utf-8"))
    agent = eval_config(raw).env.agent
    assert (agent.harness.id, agent.runtime.type) == ("bash", "subprocess")
    assert "revision" not in raw["env"]["taskset"]  # pinned.py decides, as `push` writes it


def test_the_sandbox_image_has_numpy_and_pillow() -> None:
    pip = re.findall(r"pip install (.*)", DOCKERFILE.read_text())
    pinned = {spec.strip('"').split("==")[0].lower() for line in pip for spec in line.split()}
    assert {"numpy", "pillow"} <= pinned
