"""Rollouts through the real verifiers machinery on the local subprocess runtime, with a
scripted agent (no model) acting in the workspace through the runtime."""

import json
from importlib.resources import files
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from periapical_lesions.policies import reference
from periapical_lesions.scoring import score
from periapical_lesions.taskset import (
    WORKSPACE_FILES,
    FilmTask,
    PeriapicalLesionsConfig,
    PeriapicalLesionsTaskset,
)

SPLITS = ("train", "validation", "test")


def load_tasks(folder: Path, split: str = "test") -> list[FilmTask]:
    return list(PeriapicalLesionsTaskset(PeriapicalLesionsConfig(data_dir=folder, split=split)))


def film_with_lesions(folder: Path) -> FilmTask:
    return next(task for task in load_tasks(folder) if task.data.lesions)


def shifted(report: dict, dx: float) -> dict:
    """The report with every box moved right by `dx`, kept inside the image."""
    moved = []
    for lesion in report["lesions"]:
        x1, y1, x2, y2 = lesion["box"]
        step = min(dx, 1.0 - x2)
        moved.append({"box": [x1 + step, y1, x2 + step, y2], "pai": lesion["pai"]})
    return {"lesions": moved}


def recorded(trace) -> tuple[float, dict[str, float]]:
    return trace.rewards["reward"].score, dict(trace.metrics)


def test_setup_writes_the_four_files(sample_dataset_dir: Path, agent) -> None:
    row = pq.read_table(sample_dataset_dir / "data" / "test-00000-of-00001.parquet").to_pylist()[0]
    task = load_tasks(sample_dataset_dir)[0]
    assert task.key == row["film_id"]
    _, seen = agent.rollout(
        task, [*(agent.read_file(name) for name in WORKSPACE_FILES), agent.run_command("ls", "-A")]
    )
    film, referral, codebook, tool, listing = seen
    assert film == row["image"]["bytes"]
    assert referral.decode() == row["referral"]["text"]
    tool_source = files("periapical_lesions").joinpath("radreport.py").read_bytes()
    assert tool == tool_source
    text = codebook.decode()
    for needed in ("PAI", "| 3 |", "| 4 |", "| 5 |", '"lesions"', '"box"', "python3 radreport.py"):
        assert needed in text, needed
    assert "PAI 1" in text and "PAI 2" in text and "are not lesions" in " ".join(text.split())
    assert sorted(listing.stdout.split()) == sorted(WORKSPACE_FILES)
    for name in WORKSPACE_FILES:
        assert name in task.data.prompt
    for leak in ("PAI", "{", "box", "grade", "json"):
        assert leak not in task.data.prompt


WORKSPACE_VALID = [
    '{"lesions": []}',
    '{"lesions": [{"box": [0.1, 0.2, 0.3, 0.4], "pai": 4.0}]}',
]
WORKSPACE_INVALID = [
    "not json",
    '{"lesions": [{"box": [0.1, 0.2, 0.3], "pai": 3}]}',
    '{"lesions": [{"box": [0.1, 0.2, true, 0.4], "pai": 3}]}',
    '{"lesions": [{"box": [0.1, 0.2, NaN, 0.4], "pai": 3}]}',
    '{"lesions": [{"box": [0.3, 0.2, 0.1, 0.4], "pai": 3}]}',
    '{"lesions": [{"box": [0.1, 0.2, 0.3, 1.5], "pai": 3}]}',
    '{"lesions": [{"box": [0.1, 0.2, 0.3, 0.4], "pai": 3.9}]}',
    '{"lesions": [{"box": [0.1, 0.2, 0.3, 0.4], "pai": true}]}',
    '{"lesions": [{"box": [0.1, 0.2, 0.3, 0.4], "pai": "4"}]}',
    '{"lesions": [{"box": [0.1, 0.2, 0.3, 0.4], "pai": 2}]}',
    '{"findings": []}',
]


def test_radreport_in_the_workspace(synthetic_dataset_dir: Path, agent) -> None:
    task = load_tasks(synthetic_dataset_dir)[0]
    steps = []
    for text in WORKSPACE_VALID + WORKSPACE_INVALID:
        steps += [
            agent.write_file("report.json", text),
            agent.run_command("python3", "radreport.py", "report.json"),
        ]
    steps.append(agent.run_command("ls", "-A"))
    _, seen = agent.rollout(task, steps)
    results, listing = seen[1:-1:2], seen[-1]
    codes = [result.exit_code for result in results]
    assert codes == [0] * len(WORKSPACE_VALID) + [1] * len(WORKSPACE_INVALID)
    for result in results[len(WORKSPACE_VALID) :]:
        assert result.stdout.startswith("report.json: ") and result.stdout.strip()
    assert sorted(listing.stdout.split()) == sorted([*WORKSPACE_FILES, "report.json"])


def test_reward_for_a_filed_report_equals_the_scorer(sample_dataset_dir: Path, agent) -> None:
    task = film_with_lesions(sample_dataset_dir)
    report = shifted(reference(task.data.lesions), 0.004)
    report["lesions"].append({"box": [0.01, 0.01, 0.05, 0.05], "pai": 5})
    trace, seen = agent.rollout(
        task,
        [
            agent.write_file("report.json", json.dumps(report)),
            agent.run_command("python3", "radreport.py", "report.json"),
        ],
    )
    assert seen[1].exit_code == 0
    expected = score(task.data.lesions, report)
    assert 0.0 < expected.reward < 1.0
    assert recorded(trace) == (expected.reward, expected.metrics())
    assert trace.reward == expected.reward


def test_only_the_final_file_counts(sample_dataset_dir: Path, agent) -> None:
    task = film_with_lesions(sample_dataset_dir)
    final = {"lesions": [{"box": [0.0, 0.0, 0.01, 0.01], "pai": 3}]}
    trace, _ = agent.rollout(
        task,
        [
            agent.write_file("report.json", json.dumps(reference(task.data.lesions))),
            agent.run_command("python3", "radreport.py", "report.json"),
            agent.write_file("report.json", json.dumps(final)),
        ],
    )
    expected = score(task.data.lesions, final)
    assert expected.reward == 0.0
    assert recorded(trace) == (expected.reward, expected.metrics())


FAKE = "#!/bin/sh\necho '{\"lesions\": %s}'\nexit 0\n"


def test_fake_python3_and_cat_in_the_workspace_do_not_change_the_score(
    sample_dataset_dir: Path, agent, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the workspace first on PATH, any command the scorer ran there would meet the
    agent's fakes, which print the perfect report; the score must still be the file's."""
    monkeypatch.setenv("PATH", f".:{Path('/bin')}:{Path('/usr/bin')}")
    task = film_with_lesions(sample_dataset_dir)
    perfect = json.dumps(reference(task.data.lesions)["lesions"])
    filed = {"lesions": [{"box": [0.0, 0.0, 0.01, 0.01], "pai": 3}]}
    trace, seen = agent.rollout(
        task,
        [
            agent.write_file("report.json", json.dumps(filed)),
            agent.write_file("python3", FAKE % perfect),
            agent.write_file("cat", FAKE % perfect),
            agent.run_command("/bin/chmod", "+x", "python3", "cat"),
            agent.run_command("cat", "report.json"),
        ],
    )
    assert json.loads(seen[-1].stdout)["lesions"] == json.loads(perfect)  # the fakes are live
    expected = score(task.data.lesions, filed)
    assert expected.reward == 0.0
    assert recorded(trace) == (expected.reward, expected.metrics())


def test_missing_report_counts_as_no_findings(synthetic_dataset_dir: Path, agent) -> None:
    with_lesions, lesion_free = (
        load_tasks(synthetic_dataset_dir)[0],
        load_tasks(synthetic_dataset_dir)[2],
    )
    assert with_lesions.data.lesions and not lesion_free.data.lesions
    (sick, _), (healthy, _) = agent.rollouts([(with_lesions, []), (lesion_free, [])])
    assert recorded(sick) == (0.0, score(with_lesions.data.lesions, None).metrics())
    assert healthy.rewards["reward"].score == 1.0 and healthy.metrics["report_valid"] == 0.0


def test_reference_policy_scores_one_on_every_film(sample_dataset_dir: Path, agent) -> None:
    tasks = [task for split in SPLITS for task in load_tasks(sample_dataset_dir, split)]
    assert any(not task.data.lesions for task in tasks) and any(task.data.lesions for task in tasks)
    runs = [
        (task, [agent.write_file("report.json", json.dumps(reference(task.data.lesions)))])
        for task in tasks
    ]
    for (task, _), (trace, _) in zip(runs, agent.rollouts(runs), strict=True):
        assert trace.reward == 1.0, task.key
        assert trace.metrics["matched"] == len(task.data.lesions)
