"""Splits: whole look-alike components assigned to train / validation / test, a pure function
of the groups' figures, the fractions and a seed. ``AssignConfig`` is the assign step's
settings (standard library only: the command line reads it for its options)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class AssignConfig:
    """The assign step's settings."""

    seed: int = field(default=0, metadata={"help": "Split assignment seed."})
    fractions: tuple[float, float, float] = field(
        default=(0.8, 0.1, 0.1),
        metadata={"help": "Shares of train, validation and test (three numbers summing to 1)."},
    )
