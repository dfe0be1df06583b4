"""Drive scripted policies through the real rollout machinery.

Each rollout is a stock `vf.Agent.run`: subprocess runtime, interception server, the
taskset's clinic tool server over MCP, the task's `@stop`s and rubric. Only the model is
scripted (see `scripted_model`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import verifiers.v1 as vf

from dental_assistant_agent.harness import InProcessChatConfig
from dental_assistant_agent.scripted_model import scripted_model
from dental_assistant_agent.taskset import DentalAssistantConfig, DentalAssistantTaskset, DentalTask

KEY_VARIABLE = "DENTAL_SCRIPTED_MODEL_KEY"
"""Unset on purpose: the scripted endpoint needs no key."""


def scripted_agent(policy: str, base_url: str) -> vf.Agent:
    return vf.Agent(
        vf.AgentConfig(
            model=policy,
            harness=InProcessChatConfig(),
            runtime=vf.SubprocessConfig(),
            client=vf.EvalClientConfig(base_url=base_url, api_key_var=KEY_VARIABLE),
        )
    )


async def run_policies(
    jobs: Sequence[tuple[str, DentalTask]],
    config: DentalAssistantConfig | None = None,
    concurrency: int = 8,
) -> list[vf.Trace]:
    """Run each (policy, task) once, concurrently; traces come back in job order."""
    config = config or DentalAssistantConfig()
    gate = asyncio.Semaphore(concurrency)
    async with (
        scripted_model() as base_url,
        vf.mcp.serve_shared(DentalAssistantTaskset.toolsets(config)) as shared,
    ):
        agents = {policy: scripted_agent(policy, base_url) for policy in {p for p, _ in jobs}}

        async def run(policy: str, task: DentalTask) -> vf.Trace:
            async with gate:
                return await agents[policy].run(task, tools=shared)

        return list(await asyncio.gather(*(run(policy, task) for policy, task in jobs)))
