"""Per-rollout state shared by the tool server and the scorer; never shown to the agent."""

from __future__ import annotations

import verifiers.v1 as vf

from dental_assistant_agent.cases import Case
from dental_assistant_agent.clinic import ClinicRecord


class ClinicState(vf.State):
    case: Case | None = None
    """Hidden clinic truth, set by the task's setup hook; the agent cannot supply it."""
    record: ClinicRecord = ClinicRecord()
