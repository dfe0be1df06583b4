"""Dental-assistant-agent: a synthetic multi-turn tool-use clinic simulator (verifiers v1).

The package is the taskset plugin, its environment (the single-agent env with a local
runtime by default) and an optional harness plugin (the in-process chat loop used by the
scripted policies), each resolved by verifiers from `__all__` by its base class.
`load_environment` is the published Python entry point.
"""

from dental_assistant_agent.environment import DentalAssistantEnv, load_environment
from dental_assistant_agent.harness import InProcessChatHarness
from dental_assistant_agent.taskset import DentalAssistantTaskset

__all__ = [
    "DentalAssistantEnv",
    "DentalAssistantTaskset",
    "InProcessChatHarness",
    "load_environment",
]
