"""The same-picture step: candidates by hash, confirmed in pixels (whole frame) or by local
features under one fitted transform (another frame). Its product, the confirmed pairs with
their evidence (``detect.ConfirmedPairs``), is what the keeper step (``curation.keeper``)
reads to keep one film per group.
``SamePictureConfig`` is the step's setting (standard library only)."""

from __future__ import annotations

from dataclasses import dataclass, field

from curation.core.vocabulary import SAME_PICTURE_RADIUS


@dataclass(frozen=True)
class SamePictureConfig:
    """The same-picture step's setting."""

    same_picture_distance: int = field(
        default=SAME_PICTURE_RADIUS,
        metadata={
            "help": "Same-picture candidates within this many bits (confirmed in pixels).",
            "min": 0,
            "max": 512,
        },
    )
