"""The clinic's report filing check: python3 radreport.py report.json

Validates a periapical findings report and prints one line per problem. Exit status 0 means
the report is valid, 1 means it is not. It only reads the report: it records no submission
and changes no file. Standard library only; runs on Python 3.8 and later.

This file is also the scorer's one definition of a report: which file counts (a regular file,
not a link, FIFO or device), how much of it is read, and what parses and validates. The
environment imports it, so the check the agent runs and the score cannot disagree.
"""

from __future__ import annotations

import json
import math
import os
import stat
import sys

LESION_GRADES = (3, 4, 5)
MAX_REPORT_BYTES = 1_000_000
"""A report longer than this is not a report: at most this many bytes (plus one, to tell an
exact fit from an overflow) are ever read."""
USAGE = "usage: python3 radreport.py report.json"


class NoReport(Exception):
    """The path does not hold a report file that may be read (missing, a link, a FIFO...)."""


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


def _lesion_problems(where: str, lesion: object) -> list[str]:
    if not isinstance(lesion, dict):
        return [f'{where}: must be an object with "box" and "pai"']
    return _box_problems(where, lesion.get("box")) + _grade_problems(where, lesion.get("pai"))


def _lesion_list(report: object) -> tuple[list[object] | None, list[str]]:
    """The report's lesion list, or None with the problem that leaves none to read."""
    if not isinstance(report, dict):
        return None, ['the report must be a JSON object like {"lesions": [...]}']
    lesions = report.get("lesions")
    if not isinstance(lesions, list):
        return None, ['the report needs a "lesions" list (an empty list means no findings)']
    return lesions, []


def report_problems(report: object) -> list[str]:
    """Every problem with a parsed report, one readable line each; empty when it is valid."""
    lesions, problems = _lesion_list(report)
    if lesions is None:
        return problems
    return [
        problem
        for index, lesion in enumerate(lesions)
        for problem in _lesion_problems(f"lesions[{index}]", lesion)
    ]


def countable_lesions(report: object) -> tuple[list[dict] | None, list[str]]:
    """What the scorer counts: the lesions that pass their own checks (normalized), with the
    problems of those it drops. A lesion with a NaN box or a grade of 3.9 is dropped and the
    rest still count; None (no findings) only when there is no lesion list at all.

    The filing check stays strict (any problem makes the report invalid), so the agent is
    told about every bad lesion; only the score is per lesion."""
    lesions, problems = _lesion_list(report)
    if lesions is None:
        return None, problems
    kept: list[dict] = []
    for index, lesion in enumerate(lesions):
        found = _lesion_problems(f"lesions[{index}]", lesion)
        if found or not isinstance(lesion, dict):
            problems += found
        else:
            kept.append({"box": [float(v) for v in lesion["box"]], "pai": int(lesion["pai"])})
    return kept, problems


def report_file_bytes(path: str) -> bytes:
    """The first MAX_REPORT_BYTES + 1 bytes of the regular file at `path`.

    Only a regular file counts: a symbolic link could lead out of the workspace, and a FIFO or
    device would block or never end. The link check uses lstat and O_NOFOLLOW; the
    non-blocking open and the fstat recheck also cover a file swapped for a FIFO after the
    lstat. Raises NoReport with the reason otherwise."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        raise NoReport("no such file") from None
    except OSError as error:
        raise NoReport(f"cannot read the report: {error.strerror}") from None
    if stat.S_ISLNK(mode):
        raise NoReport("is a symbolic link, and only a regular file counts as the report")
    if not stat.S_ISREG(mode):
        raise NoReport("is not a regular file, and only a regular file counts as the report")
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        descriptor = os.open(path, flags)
    except OSError as error:
        raise NoReport(f"cannot read the report: {error.strerror}") from None
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise NoReport("is not a regular file, and only a regular file counts as the report")
        try:
            return handle.read(MAX_REPORT_BYTES + 1)
        except OSError as error:
            raise NoReport(f"cannot read the report: {error.strerror}") from None


def decode_report(data: bytes) -> tuple[object, list[str]]:
    """The JSON document in `data`, or the reason it is none (problems non-empty).

    The size limit comes first, so nothing larger is ever parsed; a document nested too
    deeply for the parser is a problem like any other malformed JSON, not a crash."""
    if len(data) > MAX_REPORT_BYTES:
        return None, [f"the report is over the {MAX_REPORT_BYTES} byte limit"]
    try:
        return json.loads(data.decode("utf-8")), []
    except UnicodeDecodeError as error:
        return None, [f"not UTF-8 text: {error.reason} at byte {error.start}"]
    except RecursionError:
        return None, ["not a report: the JSON nests too deeply"]
    except ValueError as error:
        return None, [f"not valid JSON: {error}"]


def parse_report(data: bytes) -> tuple[dict | None, list[str]]:
    """The valid report in `data`, or None with every problem (one readable line each)."""
    report, problems = decode_report(data)
    problems = problems or report_problems(report)
    if problems or not isinstance(report, dict):
        return None, problems
    return report, problems


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(USAGE, file=sys.stderr)
        return 2
    path = argv[0]
    try:
        report, problems = parse_report(report_file_bytes(path))
    except NoReport as reason:
        report, problems = None, [str(reason)]
    for problem in problems:
        print(f"{path}: {problem}")
    if report is None:
        return 1
    print(f"{path}: valid report with {len(report['lesions'])} lesion(s); ready to file")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
