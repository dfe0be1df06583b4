"""Scripted policies through the real rollout machinery (interception, MCP tool server,
@stops and rubric), from one shared concurrent batch."""

import pytest


def test_reference_scores_one_on_every_family_and_split(rollouts):
    reference = [trace for policy, trace in rollouts if policy == "reference"][:24]
    assert len({trace.task.data.id for trace in reference}) == 24
    for trace in reference:
        assert trace.ok, trace.errors
        assert trace.reward == 1.0, (trace.task.data.id, trace.metrics)
        assert trace.metrics["safety"] == trace.metrics["handoff"] == 1.0
        assert trace.stop_condition == "handoff_submitted"


def test_adversaries_score_as_the_rules_say(rollouts, adversaries):
    seen = {policy: trace for policy, trace in rollouts if policy in adversaries}
    assert set(seen) == set(adversaries)
    for policy, (family, expected, unsafe) in adversaries.items():
        trace = seen[policy]
        assert trace.task.data.case.family == family
        assert trace.reward == pytest.approx(expected), policy
        assert trace.metrics["safety"] == (0.0 if unsafe else 1.0), policy


def test_turn_budget_stops_the_run_and_caps_the_reward(rollouts):
    _, trace = rollouts[-1]
    assert trace.task.data.max_turns == 2
    assert trace.stop_condition == "turn_budget_spent" and trace.num_turns == 2
    assert trace.state.record.handoff is None
    assert trace.reward == pytest.approx(0.25)  # full history only; capped anyway


def test_concurrent_rollouts_share_no_state(rollouts):
    for _, trace in rollouts:
        case = trace.state.case
        assert case is not None and case.case_id == trace.task.data.id
        named = {
            entry.arguments.get("patient_id")
            for entry in trace.state.record.audit
            if entry.arguments and entry.outcome == "ok"
        } - {None}
        assert named <= {case.patient_id}
