"""Look-alikes: kept films within the look-alike distance joined into components, and the
visits of one patient verified by local features. ``LookalikeConfig`` is the step's
settings (standard library only)."""

from __future__ import annotations

from dataclasses import dataclass, field

from curation.core.vocabulary import LOOKALIKE_DISTANCE


@dataclass(frozen=True)
class LookalikeConfig:
    """The lookalikes step's settings."""

    lookalike_distance: int = field(
        default=LOOKALIKE_DISTANCE,
        metadata={
            "help": "Look-alike films within this Hamming distance (512-bit hash).",
            "min": 0,
            "max": 512,
        },
    )
    link_visits: bool = field(
        default=False,
        metadata={
            "help": "Join visits of one patient verified by local features into one look-alike "
            "component (one split)."
        },
    )
