"""Anything the agent leaves as report.json is hostile input: a deeply nested document, an
oversized one, a FIFO or a symbolic link must each score as "no report" (or an invalid one),
say why in the trace, and get one line from the filing check; nothing may hang or raise."""

import json
import os
import subprocess
import sys
from importlib.resources import files
from pathlib import Path

import pytest
from periapical_lesions.policies import reference
from periapical_lesions.radreport import MAX_REPORT_BYTES
from periapical_lesions.scoring import score
from periapical_lesions.taskset import PeriapicalLesionsConfig, PeriapicalLesionsTaskset

DEEP = "[" * 100_000 + "]" * 100_000
CLI_WATCHDOG_SECONDS = 120


def padded(report: dict, size: int) -> str:
    """A valid report made `size` bytes long with trailing whitespace (still valid JSON)."""
    text = json.dumps(report)
    return text + " " * (size - len(text))


def first_film_with_lesions(folder: Path):
    tasks = PeriapicalLesionsTaskset(PeriapicalLesionsConfig(data_dir=folder, split="test"))
    return next(task for task in tasks if task.data.lesions)


def radreport(folder: Path, name: str = "report.json") -> subprocess.CompletedProcess:
    """The filing check as the agent runs it, in a folder holding the report."""
    script = folder / "radreport.py"
    script.write_text(files("periapical_lesions").joinpath("radreport.py").read_text())
    return subprocess.run(
        [sys.executable, "radreport.py", name],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=CLI_WATCHDOG_SECONDS,
        check=False,
    )


def assert_one_line_refusal(result: subprocess.CompletedProcess, words: str) -> None:
    assert result.returncode == 1, result.stdout
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith("report.json: "), result.stdout
    assert words in lines[0], lines[0]


def test_deeply_nested_report_is_one_line_for_the_validator(tmp_path: Path) -> None:
    (tmp_path / "report.json").write_text(DEEP)
    assert_one_line_refusal(radreport(tmp_path), "nest")


def test_oversized_valid_report_is_refused_by_the_validator(tmp_path: Path) -> None:
    report = {"lesions": [{"box": [0.1, 0.2, 0.3, 0.4], "pai": 3}]}
    (tmp_path / "report.json").write_text(padded(report, MAX_REPORT_BYTES + 10))
    assert_one_line_refusal(radreport(tmp_path), f"{MAX_REPORT_BYTES} byte")
    (tmp_path / "report.json").write_text(padded(report, MAX_REPORT_BYTES))
    assert radreport(tmp_path).returncode == 0


def test_fifo_is_refused_by_the_validator_without_hanging(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "report.json")
    assert_one_line_refusal(radreport(tmp_path), "not a regular file")


def test_symlink_is_refused_by_the_validator(tmp_path: Path) -> None:
    outside = tmp_path / "outside.json"
    outside.write_text('{"lesions": []}')
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "report.json").symlink_to(outside)
    assert_one_line_refusal(radreport(workspace), "symbolic link")


def no_report_reason(trace) -> str:
    return trace.info["report_status"]


def test_deeply_nested_report_scores_as_invalid(synthetic_dataset_dir: Path, agent) -> None:
    task = first_film_with_lesions(synthetic_dataset_dir)
    trace, _ = agent.rollout(task, [agent.write_file("report.json", DEEP)])
    assert trace.reward == 0.0 and trace.metrics["report_valid"] == 0.0
    assert "nest" in no_report_reason(trace)


def test_scorer_and_validator_share_the_size_limit(synthetic_dataset_dir: Path, agent) -> None:
    task = first_film_with_lesions(synthetic_dataset_dir)
    perfect = reference(task.data.lesions)
    (over, _), (at, _) = agent.rollouts(
        [
            (task, [agent.write_file("report.json", padded(perfect, MAX_REPORT_BYTES + 1))]),
            (task, [agent.write_file("report.json", padded(perfect, MAX_REPORT_BYTES))]),
        ]
    )
    assert over.reward == 0.0 and f"{MAX_REPORT_BYTES} byte" in no_report_reason(over)
    assert at.reward == 1.0 and at.metrics["report_valid"] == 1.0


def test_fifo_report_is_no_report(synthetic_dataset_dir: Path, agent) -> None:
    task = first_film_with_lesions(synthetic_dataset_dir)
    trace, _ = agent.rollout(task, [agent.run_command("mkfifo", "report.json")])
    assert trace.reward == 0.0 and trace.metrics["report_valid"] == 0.0
    assert "not a regular file" in no_report_reason(trace)


def test_symlink_out_of_the_workspace_is_no_report(
    synthetic_dataset_dir: Path, agent, tmp_path: Path
) -> None:
    task = first_film_with_lesions(synthetic_dataset_dir)
    outside = tmp_path / "perfect.json"
    outside.write_text(json.dumps(reference(task.data.lesions)))
    assert score(task.data.lesions, json.loads(outside.read_text())).reward == 1.0
    trace, _ = agent.rollout(task, [agent.run_command("ln", "-s", str(outside), "report.json")])
    assert trace.reward == 0.0 and trace.metrics["report_valid"] == 0.0
    assert "symbolic link" in no_report_reason(trace)


@pytest.mark.parametrize("content", ["", "not json", '{"lesions": [{"box": [1, 2], "pai": 3}]}'])
def test_an_invalid_report_says_why_in_the_trace(
    synthetic_dataset_dir: Path, agent, content: str
) -> None:
    task = first_film_with_lesions(synthetic_dataset_dir)
    trace, _ = agent.rollout(task, [agent.write_file("report.json", content)])
    assert trace.metrics["report_valid"] == 0.0
    assert no_report_reason(trace).startswith("invalid report: ")


def test_a_valid_report_is_recorded_in_the_trace(synthetic_dataset_dir: Path, agent) -> None:
    task = first_film_with_lesions(synthetic_dataset_dir)
    perfect = reference(task.data.lesions)
    trace, _ = agent.rollout(task, [agent.write_file("report.json", json.dumps(perfect))])
    assert no_report_reason(trace) == f"valid report with {len(perfect['lesions'])} lesion(s)"
    assert trace.info["report_lesions"] == perfect["lesions"]


def test_deeply_nested_reply_holds_no_report() -> None:
    from periapical_lesions.reply import parse_reply

    good = '{"lesions": []}'
    assert parse_reply('{"lesions": ' + DEEP + "}") is None
    assert parse_reply('{"lesions": ' + DEEP + "} then " + good) == {"lesions": []}
