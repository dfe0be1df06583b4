"""The shipped eval config, parsed by verifiers' own eval config class as vf-eval parses it."""

import re
import tomllib
from pathlib import Path

from verifiers.v1.configs.cli.eval import EvalConfig

ROOT = Path(__file__).parents[3]
CONFIG = ROOT / "configs" / "periapical-lesions" / "eval.toml"
PUBLISHED_CLAUDE_CODE = "2.1.280"


def shipped() -> EvalConfig:
    raw = tomllib.loads(CONFIG.read_text(encoding="utf-8"))
    return EvalConfig.model_validate({**raw, "model": "any/model", "num_rollouts": 2})


def test_one_revision_line_for_push_to_rewrite_unpinned_or_a_full_sha() -> None:
    lines = [line for line in CONFIG.read_text().splitlines() if line.startswith("revision")]
    assert len(lines) == 1
    assert re.fullmatch(r'revision = "([0-9a-f]{40})?"', lines[0]), lines[0]


def test_config_resolves_to_the_published_setup() -> None:
    config = shipped()
    taskset, agent = config.env.taskset, config.env.agent
    assert type(taskset).__name__ == "PeriapicalLesionsConfig" and taskset.split == "test"
    assert agent.max_turns == 50
    assert agent.harness.id == "claude_code" and agent.harness.version == PUBLISHED_CLAUDE_CODE
    assert {"WebSearch", "WebFetch"} <= set(agent.harness.disabled_tools)


def test_sandbox_egress_is_denied() -> None:
    runtime = shipped().env.agent.runtime
    assert runtime.type == "docker"
    assert runtime.network_restricted and runtime.allow == [] and runtime.block == ["*"]
