"""Splits: whole look-alike components assigned to train / validation / test, a pure function
of the groups' figures, the fractions and a seed. ``AssignConfig`` is the assign step's
settings (standard library only: the command line reads it for its options)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

FRACTIONS_SUM_TOLERANCE = 1e-6  # typed shares such as 0.7 0.15 0.15 sum to 1 within this


@dataclass(frozen=True)
class AssignConfig:
    """The assign step's settings. Each share lies in [0, 1] (the field's range, which the
    command line checks), is above 0 and the three sum to 1 (``__post_init__``): every split
    of a published dataset needs films."""

    seed: int = field(default=0, metadata={"help": "Split assignment seed."})
    fractions: tuple[float, float, float] = field(
        default=(0.8, 0.1, 0.1),
        metadata={
            "help": "Shares of train, validation and test (three numbers summing to 1).",
            "min": 0.0,
            "max": 1.0,
        },
    )

    def __post_init__(self) -> None:
        check_fractions(self.fractions)


def check_fractions(fractions: tuple[float, ...]) -> None:
    """Raise ``ValueError`` (one sentence) unless ``fractions`` are three finite shares, each
    above 0 and at most 1, summing to 1."""
    shares = " ".join(f"{f:g}" for f in fractions)
    if len(fractions) != 3 or not all(math.isfinite(f) for f in fractions):
        raise ValueError(f"the shares must be three numbers, got {shares}.")
    if any(f <= 0 or f > 1 for f in fractions):
        raise ValueError(
            f"each share must be above 0 and at most 1 (an empty split cannot be "
            f"published), got {shares}."
        )
    total = math.fsum(fractions)
    if abs(total - 1) > FRACTIONS_SUM_TOLERANCE:
        raise ValueError(f"the three shares must sum to 1, got {shares} (sum {total:g}).")
