"""The clinic tool server: one MCP tool over per-rollout hidden state.

Taskset-scoped (one process per eval), yet stateless itself: every call pulls the calling
rollout's state through the framework's signed state channel, so rollouts share nothing.
"""

from __future__ import annotations

import json

import verifiers.v1 as vf

from dental_assistant_agent.clinic import apply_action
from dental_assistant_agent.state import ClinicState


class ClinicToolset(vf.Toolset[vf.SharedToolsetConfig, ClinicState]):
    TOOL_PREFIX = None

    @vf.tool
    def clinic_action(self, action: str, arguments: str) -> str:
        """Perform one clinic action. `action` is one of ask_patient, list_slots,
        book_appointment, escalate, give_guidance, handoff; `arguments` is a JSON-encoded
        object with that action's fields (see the system prompt)."""
        state = self.state
        if state.case is None:
            return json.dumps({"status": "error", "message": "no active call"})
        state.record, reply = apply_action(state.case, state.record, action, arguments)
        return reply


if __name__ == "__main__":
    ClinicToolset.run()
