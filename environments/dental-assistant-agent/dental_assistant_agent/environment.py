"""The environment verifiers runs, and the published `load_environment` entry point.

A plain taskset would get verifiers' stock single-agent env, whose agent defaults to the
Prime sandbox runtime and so needs a Prime login even for a local run. This env is the same
single-agent env with the local subprocess runtime as its default (any `--env.agent.runtime.*`
still overrides it), and it keeps both case sets at hand: `taskset` is the split being run
(the 48 held-out evaluation cases unless told otherwise), `tasksets` holds both.
"""

from __future__ import annotations

import verifiers.v1 as vf

from dental_assistant_agent.cases import Split
from dental_assistant_agent.taskset import DentalAssistantConfig, DentalAssistantTaskset

TASKSET_ID = "dental-assistant-agent"
"""The plugin id verifiers resolves to this package (`vf-eval dental-assistant-agent`)."""


class DentalAssistantEnvConfig(vf.SingleAgentEnvConfig):
    agent: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig())
    """The one seat; runs on this machine by default (no sandbox, no Prime login)."""


class DentalAssistantEnv(vf.SingleAgentEnv, vf.Env[DentalAssistantEnvConfig]):
    """One agent per call, over the configured split; both splits reachable by name."""

    def __init__(self, config: DentalAssistantEnvConfig) -> None:
        super().__init__(config)
        if not isinstance(config.taskset, DentalAssistantConfig):
            raise TypeError(
                f"{type(self).__name__} runs the {TASKSET_ID} taskset only, not "
                f"{config.taskset.id!r}"
            )
        self.tasksets: dict[Split, DentalAssistantTaskset] = {
            split: DentalAssistantTaskset(config.taskset.model_copy(update={"split": split}))
            for split in ("train", "eval")
        }


def load_environment(
    seed: int = 0,
    train_variants: int = 8,
    eval_variants: int = 4,
    max_turns: int = 24,
    split: Split = "eval",
) -> DentalAssistantEnv:
    """The environment `vf-eval` would build for these options (validated, so a bad value
    is refused naming the option)."""
    taskset = DentalAssistantConfig.model_validate(
        {
            "id": TASKSET_ID,
            "seed": seed,
            "train_variants": train_variants,
            "eval_variants": eval_variants,
            "max_turns": max_turns,
            "split": split,
        }
    )
    return DentalAssistantEnv(DentalAssistantEnvConfig(taskset=taskset))
