"""The environment's own defaults: how an agent plays the worklist when nothing else is said.

verifiers 0.4.0 gives a seat whose runtime nobody configured the Prime runtime with the stock
`python:3.11-slim` image (no numpy, no Pillow) and unrestricted egress. A bare
`vf-eval periapical-lesions -m M` would then run the reading room online in an image that
cannot open the film. verifiers takes a taskset package's exported `Env` subclass and its
config class (loaders.environment_class / env_config_type), so the defaults live here: the
seat is the published setup (Claude Code in the sandbox image, no egress, 50 turns), and
any runtime a run switches to must keep the rule, or loading stops with one sentence.

The subprocess runtime is the one exception: it runs the agent on this host, as the local
config (configs/periapical-lesions/eval-local.toml) and the tests do, with the host's network;
there is no sandbox to deny it.
"""

from __future__ import annotations

import sys

import verifiers.v1 as vf
from pydantic import model_validator
from verifiers.v1.configs.runtime import NetworkPolicyConfig

SANDBOX_IMAGE = "periapical-lesions-sandbox:0.3.4"
"""The image scripts/periapical-lesions/build-image.sh builds (numpy, Pillow, the harness)."""
HARNESS = {
    "id": "claude_code",
    "version": "2.1.280",
    "disabled_tools": ["WebSearch", "WebFetch"],
}
"""The published harness: Claude Code at the release the published runs used (baked into
the image), with the web tools removed."""
MAX_TURNS = 50


def sandbox_problem(runtime: vf.RuntimeConfig) -> str | None:
    """Why `runtime` may not run the worklist (no egress, an image with numpy and Pillow),
    or None when it may."""
    if isinstance(runtime, vf.SubprocessConfig):
        return None
    if not isinstance(runtime, NetworkPolicyConfig):
        return (
            f"periapical-lesions: the {runtime.type} runtime cannot deny the sandbox network "
            "access, and the reading room runs offline; use the docker or prime runtime."
        )
    if runtime.allow != []:
        return (
            f"periapical-lesions: the sandbox must have no egress, but the {runtime.type} "
            f"runtime allows {runtime.allow}; pass --env.agent.runtime.allow '[]'."
        )
    image_field = type(runtime).model_fields.get("image")
    image = getattr(runtime, "image", None)
    if image_field is not None and image == image_field.default:
        return (
            f"periapical-lesions: the {runtime.type} runtime's stock image {image} has no "
            "numpy or Pillow to read the film with; build the sandbox image "
            "(scripts/periapical-lesions/build-image.sh) and pass --env.agent.runtime.image."
        )
    return None


class PeriapicalLesionsEnvConfig(vf.SingleAgentEnvConfig):
    agent: vf.AgentConfig = vf.AgentConfig.model_validate(
        {
            "harness": HARNESS,
            "runtime": {"type": "docker", "image": SANDBOX_IMAGE, "allow": []},
            "max_turns": MAX_TURNS,
        }
    )
    """The published seat: Claude Code in the sandbox image with no egress. A run's config
    or options are merged onto it; switching the runtime type starts from that type's own
    defaults, which the check below then holds to the same rule."""

    @model_validator(mode="after")
    def _offline_sandbox(self) -> PeriapicalLesionsEnvConfig:
        problem = sandbox_problem(self.agent.runtime)
        if problem is not None:
            raise ValueError(problem)
        return self


class PeriapicalLesionsEnv(vf.SingleAgentEnv, vf.Env[PeriapicalLesionsEnvConfig]):
    """The single-agent env, with the worklist's defaults (see the module docstring)."""

    def __init__(self, config: PeriapicalLesionsEnvConfig) -> None:
        # Said before anything else of the run: verifiers builds the env first, and loads
        # the tasks (where the commit is resolved and printed) only later.
        taskset = config.taskset
        unpinned = getattr(taskset, "revision", "") is None
        if unpinned and getattr(taskset, "data_dir", None) is None:
            print(
                f"periapical-lesions: UNPINNED dataset: no revision of "
                f"{getattr(taskset, 'dataset', 'the dataset')} is pinned, so this run reads "
                "whatever its main branch points to when the tasks load.",
                file=sys.stderr,
                flush=True,
            )
        super().__init__(config)
