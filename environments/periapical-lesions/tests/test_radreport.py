import json
import subprocess
import sys
from importlib.resources import files
from pathlib import Path

import pytest
from periapical_lesions.radreport import report_problems

VALID = [
    {"lesions": []},
    {"lesions": [{"box": [0.1, 0.2, 0.3, 0.4], "pai": 3}]},
    {"lesions": [{"box": [0, 0, 1, 1], "pai": 4.0}, {"box": [0.5, 0.5, 0.6, 0.6], "pai": 5}]},
]

INVALID = {
    "not an object": [],
    "no lesions list": {"findings": []},
    "lesions not a list": {"lesions": {"box": [0.1, 0.2, 0.3, 0.4], "pai": 3}},
    "lesion not an object": {"lesions": [[0.1, 0.2, 0.3, 0.4]]},
    "three corners": {"lesions": [{"box": [0.1, 0.2, 0.3], "pai": 3}]},
    "boolean corner": {"lesions": [{"box": [0.1, 0.2, True, 0.4], "pai": 3}]},
    "string corner": {"lesions": [{"box": [0.1, "0.2", 0.3, 0.4], "pai": 3}]},
    "x1 not below x2": {"lesions": [{"box": [0.3, 0.2, 0.3, 0.4], "pai": 3}]},
    "y outside image": {"lesions": [{"box": [0.1, 0.2, 0.3, 1.2], "pai": 3}]},
    "negative corner": {"lesions": [{"box": [-0.1, 0.2, 0.3, 0.4], "pai": 3}]},
    "grade 2": {"lesions": [{"box": [0.1, 0.2, 0.3, 0.4], "pai": 2}]},
    "grade 3.9": {"lesions": [{"box": [0.1, 0.2, 0.3, 0.4], "pai": 3.9}]},
    "grade true": {"lesions": [{"box": [0.1, 0.2, 0.3, 0.4], "pai": True}]},
    "grade string": {"lesions": [{"box": [0.1, 0.2, 0.3, 0.4], "pai": "4"}]},
    "grade missing": {"lesions": [{"box": [0.1, 0.2, 0.3, 0.4]}]},
    "huge grade": {"lesions": [{"box": [0.1, 0.2, 0.3, 0.4], "pai": 10**400}]},
}
NON_FINITE = '{"lesions": [{"box": [0.1, 0.2, NaN, 0.4], "pai": 3}]}'
INFINITE_GRADE = '{"lesions": [{"box": [0.1, 0.2, 0.3, 0.4], "pai": Infinity}]}'


@pytest.mark.parametrize("report", VALID)
def test_valid_reports(report: dict) -> None:
    assert report_problems(report) == []


@pytest.mark.parametrize("name", sorted(INVALID))
def test_invalid_reports(name: str) -> None:
    assert report_problems(INVALID[name])


def test_non_finite_numbers_rejected() -> None:
    assert report_problems(json.loads(NON_FINITE))
    assert report_problems(json.loads(INFINITE_GRADE))


def test_one_line_per_problem() -> None:
    report = {"lesions": [{"box": [0.5, 0.2, 0.3, 0.4], "pai": 2}, {"box": [0, 0, 1, 1], "pai": 3}]}
    problems = report_problems(report)
    assert len(problems) == 2
    assert problems[0].startswith("lesions[0].box") and problems[1].startswith("lesions[0].pai")


def test_cli_exit_codes_and_leaves_files_alone(tmp_path: Path) -> None:
    script = tmp_path / "radreport.py"
    script.write_text(files("periapical_lesions").joinpath("radreport.py").read_text())
    report = tmp_path / "report.json"
    report.write_text(json.dumps(VALID[1]))
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    ok = subprocess.run([sys.executable, script, "report.json"], cwd=tmp_path, capture_output=True)
    assert ok.returncode == 0, ok.stdout
    report.write_text(json.dumps(INVALID["grade 3.9"]))
    bad = subprocess.run([sys.executable, script, "report.json"], cwd=tmp_path, capture_output=True)
    assert bad.returncode == 1 and b"pai" in bad.stdout
    missing = subprocess.run(
        [sys.executable, script, "nope.json"], cwd=tmp_path, capture_output=True
    )
    assert missing.returncode == 1 and b"nope.json" in missing.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(before)
