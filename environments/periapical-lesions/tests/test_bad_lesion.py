"""One bad lesion does not zero the whole report: the scorer drops a lesion that fails its
own checks (a NaN box, a grade of 3.9, ...) and scores the others, the reading of the
published notes (0.3.3: NaN values "the scorer already dropped"; 0.3.2: 3.9 does not count).
The filing check stays strict, so the agent is still told about the bad lesion."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from periapical_lesions.filing import filed_in_reply
from periapical_lesions.radreport import parse_report
from periapical_lesions.scoring import score
from periapical_lesions.taskset import PeriapicalLesionsConfig, PeriapicalLesionsTaskset

CORRECT = {"box": [0.1, 0.1, 0.2, 0.2], "pai": 4}
REFERENCE = [CORRECT]
BAD_LESIONS = {
    "NaN box": {"box": [0.5, 0.5, math.nan, 0.6], "pai": 3},
    "infinite box": {"box": [0.5, 0.5, math.inf, 0.6], "pai": 3},
    "grade 3.9": {"box": [0.5, 0.5, 0.6, 0.6], "pai": 3.9},
    "boolean grade": {"box": [0.5, 0.5, 0.6, 0.6], "pai": True},
    "grade 2": {"box": [0.5, 0.5, 0.6, 0.6], "pai": 2},
    "three corners": {"box": [0.5, 0.5, 0.6], "pai": 3},
    "not an object": "a lesion",
}


@pytest.mark.parametrize("bad", BAD_LESIONS.values(), ids=BAD_LESIONS.keys())
def test_a_correct_lesion_beside_a_bad_one_still_scores(bad: object) -> None:
    result = score(REFERENCE, {"lesions": [CORRECT, bad]})
    assert result.reward == 1.0 and result.matched == 1
    assert (result.n_reported, result.n_dropped, result.report_valid) == (1, 1, False)
    alone = score(REFERENCE, {"lesions": [bad]})
    assert (alone.reward, alone.n_reported, alone.n_dropped) == (0.0, 0, 1)


def test_a_report_without_a_lesion_list_still_counts_as_no_findings() -> None:
    for report in ({"findings": [CORRECT]}, [CORRECT], {"lesions": CORRECT}):
        result = score(REFERENCE, report)  # type: ignore[arg-type]
        assert (result.reward, result.n_reported, result.n_dropped) == (0.0, 0, 0)


def test_the_filing_check_still_refuses_the_report() -> None:
    text = json.dumps({"lesions": [CORRECT, BAD_LESIONS["grade 3.9"]]})
    report, problems = parse_report(text.encode())
    assert report is None and problems == [
        "lesions[1].pai: must be a whole number 3, 4 or 5, got 3.9"
    ]


@pytest.mark.parametrize("name", ["NaN box", "grade 3.9"])
def test_a_filed_report_with_one_bad_lesion_scores_the_rest(
    synthetic_dataset_dir: Path, agent, name: str
) -> None:
    tasks = PeriapicalLesionsTaskset(
        PeriapicalLesionsConfig(data_dir=synthetic_dataset_dir, split="test")
    )
    task = next(t for t in tasks if len(t.data.lesions) == 1)
    filed = {"lesions": [*task.data.lesions, BAD_LESIONS[name]]}
    text = json.dumps(filed)  # json writes NaN for math.nan, as a careless agent would
    trace, _ = agent.rollout(task, [agent.write_file("report.json", text)])
    assert trace.reward == 1.0
    assert (trace.metrics["report_valid"], trace.metrics["n_dropped"]) == (0.0, 1.0)
    status = trace.info["report_status"]
    assert status.startswith("invalid report: lesions[1].")
    assert status.endswith("1 lesion(s) scored, 1 dropped")


def test_a_reply_with_one_bad_lesion_scores_the_rest() -> None:
    import asyncio

    reply = "Report:\n" + json.dumps({"lesions": [CORRECT, BAD_LESIONS["NaN box"]]})
    filing = asyncio.run(filed_in_reply(reply))
    assert filing.lesions == [{"box": [0.1, 0.1, 0.2, 0.2], "pai": 4}] and filing.dropped == 1
