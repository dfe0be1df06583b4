"""Dental-assistant-agent: a synthetic multi-turn tool-use clinic simulator (verifiers v1)."""

from dental_assistant_agent.taskset import DentalAssistantTaskset

__all__ = ["DentalAssistantTaskset"]
