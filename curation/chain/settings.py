"""The parameters of a run, each with its default; all but ``workers`` (which changes speed,
not results) are recorded in ``curation.json``."""

from __future__ import annotations

from dataclasses import dataclass

from curation.core.vocabulary import LOOKALIKE_DISTANCE, Decode
from curation.publish.referrals import DEFAULT_SALT
from curation.same_picture.candidates import SAME_PICTURE_RADIUS


@dataclass(frozen=True)
class Settings:
    seed: int = 0
    fractions: tuple[float, float, float] = (0.8, 0.1, 0.1)
    lookalike_distance: int = LOOKALIKE_DISTANCE
    same_picture_distance: int = SAME_PICTURE_RADIUS
    decode: Decode = Decode.draft
    referral_salt: str = DEFAULT_SALT
    link_visits: bool = False  # join verified visits of one patient into one component
    workers: int = 0
