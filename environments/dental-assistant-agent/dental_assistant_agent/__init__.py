"""Dental-assistant-agent: a synthetic multi-turn tool-use clinic simulator (verifiers v1).

The package is both the taskset plugin and an optional harness plugin (the in-process chat
loop used by the scripted policies), each resolved from `__all__` by its base class.
"""

from dental_assistant_agent.harness import InProcessChatHarness
from dental_assistant_agent.taskset import DentalAssistantTaskset

__all__ = ["DentalAssistantTaskset", "InProcessChatHarness"]
