import pytest
from dental_assistant_agent.cases import build_cases
from dental_assistant_agent.taskset import DentalAssistantConfig, DentalAssistantTaskset
from pydantic import ValidationError


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("train_variants", 0),
        ("train_variants", 101),
        ("eval_variants", 0),
        ("eval_variants", 101),
        ("max_turns", 1),
        ("max_turns", 101),
        ("seed", "x"),
    ],
)
def test_out_of_range_options_are_rejected_naming_the_option(field, value):
    with pytest.raises(ValidationError, match=field):
        DentalAssistantConfig(**{field: value})


def test_defaults_give_96_training_and_48_evaluation_cases_and_run_evaluation():
    config = DentalAssistantConfig()
    assert config.split == "eval" and len(list(DentalAssistantTaskset(config))) == 48
    assert len(list(DentalAssistantTaskset(config.model_copy(update={"split": "train"})))) == 96


def test_generation_is_deterministic_and_seeded():
    first = [case.model_dump_json() for case in build_cases(3, "train", 8)]
    assert first == [case.model_dump_json() for case in build_cases(3, "train", 8)]
    other = {case.patient_id for case in build_cases(4, "train", 8)}
    assert other.isdisjoint(case.patient_id for case in build_cases(3, "train", 8))


def test_max_turns_reaches_every_task():
    tasks = list(DentalAssistantTaskset(DentalAssistantConfig(max_turns=7, eval_variants=1)))
    assert {task.data.max_turns for task in tasks} == {7}


def test_evaluation_holds_out_identifiers_wrappers_and_timings():
    train, evaluation = build_cases(0, "train", 100), build_cases(0, "eval", 100)
    for attribute in ("patient_id", "patient_name", "birth_date", "other_patient_id", "wrapper"):
        seen = {getattr(case, attribute) for case in train}
        assert seen.isdisjoint(getattr(case, attribute) for case in evaluation), attribute
    train_minutes = {case.injury_minutes for case in train} - {None}
    eval_minutes = {case.injury_minutes for case in evaluation} - {None}
    assert train_minutes and eval_minutes and train_minutes.isdisjoint(eval_minutes)
    callers = [case.patient_id for case in train + evaluation]
    assert len(set(callers)) == len(callers)
    assert set(callers).isdisjoint(case.other_patient_id for case in train + evaluation)


def test_hidden_facts_are_not_in_the_prompt():
    tasks = list(DentalAssistantTaskset(DentalAssistantConfig(split="train", train_variants=1)))
    assert len({task.data.system_prompt for task in tasks}) == 1  # nothing case-specific
    for task in tasks:
        case = task.data.case
        assert case.patient_id not in task.data.prompt
        assert case.patient_name not in task.data.prompt
        assert case.family not in task.data.prompt
