"""The clinic's report filing check: python3 radreport.py report.json

Validates a periapical findings report and prints one line per problem. Exit status 0 means
the report is valid, 1 means it is not. It only reads the report: it records no submission
and changes no file. Standard library only; runs on Python 3.8 and later.
"""

from __future__ import annotations

import json
import math
import sys

LESION_GRADES = (3, 4, 5)
USAGE = "usage: python3 radreport.py report.json"


def _is_real(value: object) -> bool:
    """JSON numbers only: booleans are ints in Python but are not numbers in a report."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_finite(value: float) -> bool:
    """Python ints never overflow, so only floats (NaN, Infinity) can be non-finite."""
    return isinstance(value, int) or math.isfinite(value)


def _box_problems(where: str, box: object) -> list[str]:
    if not isinstance(box, list) or len(box) != 4:
        return [f"{where}.box: must be a list of four numbers [x1, y1, x2, y2]"]
    problems = [
        f"{where}.box[{i}]: must be a number, got {json.dumps(v)}"
        for i, v in enumerate(box)
        if not _is_real(v)
    ]
    if problems:
        return problems
    problems = [
        f"{where}.box[{i}]: must be finite, got {v}" for i, v in enumerate(box) if not _is_finite(v)
    ]
    if problems:
        return problems
    x1, y1, x2, y2 = box
    for axis, low, high in (("x", x1, x2), ("y", y1, y2)):
        if not 0 <= low < high <= 1:
            problems.append(
                f"{where}.box: need 0 <= {axis}1 < {axis}2 <= 1 "
                f"(fractions of the image size), got {axis}1={low}, {axis}2={high}"
            )
    return problems


def _grade_problems(where: str, grade: object) -> list[str]:
    if isinstance(grade, bool) or not isinstance(grade, (int, float)):
        allowed = False
    elif isinstance(grade, int):
        allowed = grade in LESION_GRADES
    else:
        allowed = math.isfinite(grade) and grade.is_integer() and int(grade) in LESION_GRADES
    if not allowed:
        return [f"{where}.pai: must be a whole number 3, 4 or 5, got {json.dumps(grade)}"]
    return []


def report_problems(report: object) -> list[str]:
    """Every problem with a parsed report, one readable line each; empty when it is valid."""
    if not isinstance(report, dict):
        return ['the report must be a JSON object like {"lesions": [...]}']
    lesions = report.get("lesions")
    if not isinstance(lesions, list):
        return ['the report needs a "lesions" list (an empty list means no findings)']
    problems: list[str] = []
    for index, lesion in enumerate(lesions):
        where = f"lesions[{index}]"
        if not isinstance(lesion, dict):
            problems.append(f'{where}: must be an object with "box" and "pai"')
            continue
        problems += _box_problems(where, lesion.get("box"))
        problems += _grade_problems(where, lesion.get("pai"))
    return problems


def normalized_lesions(report: dict) -> list[dict]:
    """The lesions of a valid report with grades as ints and box corners as floats."""
    return [
        {"box": [float(v) for v in lesion["box"]], "pai": int(lesion["pai"])}
        for lesion in report["lesions"]
    ]


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(USAGE, file=sys.stderr)
        return 2
    path = argv[0]
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as error:
        print(f"{path}: cannot read the report: {error}")
        return 1
    try:
        report = json.loads(text)
    except ValueError as error:
        print(f"{path}: not valid JSON: {error}")
        return 1
    problems = report_problems(report)
    for problem in problems:
        print(f"{path}: {problem}")
    if problems:
        return 1
    print(f"{path}: valid report with {len(report['lesions'])} lesion(s); ready to file")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
