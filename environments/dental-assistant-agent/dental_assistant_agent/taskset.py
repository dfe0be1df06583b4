"""The verifiers v1 taskset and task: options, cases, turn budget and the rubric."""

from __future__ import annotations

from typing import Literal

import verifiers.v1 as vf
from pydantic import Field

from dental_assistant_agent.cases import Case, build_cases
from dental_assistant_agent.prompts import system_prompt
from dental_assistant_agent.scoring import Score, score
from dental_assistant_agent.server import ClinicToolset
from dental_assistant_agent.state import ClinicState


class DentalTaskData(vf.TaskData):
    case: Case
    max_turns: int


class DentalTask(vf.Task[DentalTaskData, ClinicState, vf.TaskConfig]):
    """One synthetic call; hidden facts enter the rollout's state, never the prompt."""

    async def setup(self, trace: vf.Trace) -> None:
        trace.state = ClinicState(case=self.data.case)

    @vf.stop
    async def turn_budget_spent(self, trace: vf.Trace) -> bool:
        return trace.num_turns >= self.data.max_turns

    @vf.stop
    async def handoff_submitted(self, trace: vf.Trace) -> bool:
        return trace.state.record.handoff is not None

    def breakdown(self, trace: vf.Trace) -> Score:
        return score(self.data.case, trace.state.record)

    @vf.reward(weight=1.0)
    async def clinic_reward(self, trace: vf.Trace) -> float:
        return self.breakdown(trace).total

    @vf.metric
    async def components(self, trace: vf.Trace) -> dict[str, float]:
        result = self.breakdown(trace)
        return {
            "safety": result.safe,
            "handoff": result.handoff,
            "history": result.history,
            "pathway": result.pathway,
            "guidance": result.guidance,
        }


class DentalAssistantConfig(vf.TasksetConfig):
    seed: int = 0
    """Integer used in synthetic identifiers; no random sampling."""
    split: Literal["train", "eval"] = "eval"
    """Which cases to run: the 48 held-out evaluation cases by default, or the 96 training
    ones (`train`)."""
    train_variants: int = Field(8, ge=1, le=100)
    eval_variants: int = Field(4, ge=1, le=100)
    max_turns: int = Field(24, ge=2, le=100)
    """Model responses allowed per call; several tool calls in one response are one turn."""
    tools: vf.SharedToolsetConfig = vf.SharedToolsetConfig()


class DentalAssistantTaskset(vf.Taskset[DentalTask, DentalAssistantConfig]):
    @classmethod
    def toolsets(cls, config: DentalAssistantConfig) -> list[vf.Toolset]:
        return [ClinicToolset(config.tools)]

    def load(self) -> list[DentalTask]:
        variants = (
            self.config.train_variants
            if self.config.split == "train"
            else self.config.eval_variants
        )
        prompt = system_prompt()
        return [
            DentalTask(
                DentalTaskData(
                    id=case.case_id,
                    name=case.case_id,
                    prompt=case.opening_message,
                    system_prompt=prompt,
                    case=case,
                    max_turns=self.config.max_turns,
                ),
                self.config.task,
            )
            for case in build_cases(self.config.seed, self.config.split, variants)
        ]
