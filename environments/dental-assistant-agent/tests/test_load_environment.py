"""The published entry point: `load_environment(...)` returns the environment verifiers runs."""

import pytest
import verifiers.v1 as vf
from dental_assistant_agent import load_environment
from pydantic import ValidationError


def test_published_call_returns_a_verifiers_env_with_both_splits():
    env = load_environment(seed=17, train_variants=8, eval_variants=4, max_turns=24)
    assert isinstance(env, vf.SingleAgentEnv)
    train, evaluation = list(env.tasksets["train"]), list(env.tasksets["eval"])
    assert (len(train), len(evaluation)) == (96, 48)
    assert {task.data.case.split for task in train} == {"train"}
    assert {task.data.max_turns for task in train + evaluation} == {24}
    held_out = {task.data.case.patient_id for task in evaluation}
    assert held_out.isdisjoint(task.data.case.patient_id for task in train)


def test_evaluation_runs_the_held_out_cases_by_default():
    """`env.taskset` is what `vf-eval` and `Env.run_slot` draw tasks from."""
    env = load_environment(seed=17)
    assert [task.data.id for task in env.taskset] == [task.data.id for task in env.tasksets["eval"]]
    assert len(list(env.taskset)) == 48
    assert len(list(load_environment(split="train").taskset)) == 96


def test_options_reach_the_cases():
    first = [task.data.case for task in load_environment(seed=17, eval_variants=1).taskset]
    again = [task.data.case for task in load_environment(seed=17, eval_variants=1).taskset]
    other = [task.data.case for task in load_environment(seed=18, eval_variants=1).taskset]
    assert len(first) == 12 and first == again
    assert {case.patient_id for case in first}.isdisjoint(case.patient_id for case in other)


def test_the_cli_resolves_the_same_env_with_a_local_runtime():
    """`vf-eval dental-assistant-agent` loads this package's env, whose agent runs in the
    local subprocess runtime unless told otherwise, so no Prime sandbox or login is needed."""
    config = vf.resolve_env_config({"taskset": {"id": "dental-assistant-agent"}})
    env = vf.load_environment(config)
    assert type(env) is type(load_environment())
    assert isinstance(config.agent.runtime, vf.SubprocessConfig)
    assert len(list(env.taskset)) == 48


@pytest.mark.parametrize(
    "options", [{"max_turns": 1}, {"train_variants": 101}, {"split": "test"}, {"seed": "x"}]
)
def test_bad_options_are_refused_naming_the_option(options):
    with pytest.raises(ValidationError, match=next(iter(options))):
        load_environment(**options)
