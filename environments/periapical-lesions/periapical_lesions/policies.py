"""Reference policies: fixed answers that bound what a real agent's score means."""

from __future__ import annotations

from collections.abc import Callable

Policy = Callable[[list[dict]], dict]

FIXED_BOXES = ([0.22, 0.55, 0.32, 0.70], [0.68, 0.55, 0.78, 0.70])
"""Label-free guesses: one box below each lower-molar region of a typical pantomograph."""


def reference(lesions: list[dict]) -> dict:
    """Files the reference findings: must score 1 on every film."""
    return {"lesions": [{"box": list(lesion["box"]), "pai": lesion["pai"]} for lesion in lesions]}


def empty(lesions: list[dict]) -> dict:
    """Reports no findings: scores 1 exactly on the lesion-free films."""
    return {"lesions": []}


def two_fixed_boxes(lesions: list[dict]) -> dict:
    """Ignores the film and reports the same two boxes graded PAI 3."""
    return {"lesions": [{"box": list(box), "pai": 3} for box in FIXED_BOXES]}


POLICIES: dict[str, Policy] = {
    "reference": reference,
    "empty": empty,
    "two-fixed-boxes": two_fixed_boxes,
}
