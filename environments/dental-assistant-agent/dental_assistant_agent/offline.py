"""Offline driver: a scripted policy against the simulator function, no servers.

For rule tests and quick experiments; scored rollouts go through `runner` instead.
"""

from __future__ import annotations

import json

from dental_assistant_agent.cases import Case, Split, build_case
from dental_assistant_agent.catalog import FAMILIES
from dental_assistant_agent.clinic import ClinicRecord, apply_action
from dental_assistant_agent.policies import next_message

FAMILY_INDEX = {family.name: index for index, family in enumerate(FAMILIES)}


def case_of(family: str, split: Split = "train", variant: int = 0, seed: int = 0) -> Case:
    return build_case(seed, split, FAMILY_INDEX[family], variant)


def drive_offline(policy: str, case: Case, max_turns: int = 24) -> ClinicRecord:
    """Run a policy against the simulator function directly (no server), for rule tests."""
    record = ClinicRecord()
    messages: list[dict] = [{"role": "user", "content": case.opening_message}]
    for _ in range(max_turns):
        if record.handoff is not None:
            break
        message = next_message(policy, messages)
        messages.append(message)
        if not message.get("tool_calls"):
            break
        for call in message["tool_calls"]:
            arguments = json.loads(call["function"]["arguments"])
            record, reply = apply_action(case, record, arguments["action"], arguments["arguments"])
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": reply})
    return record
