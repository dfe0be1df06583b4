"""Publish: the dataset shards, manifest, clusters, agreement pairs, referrals and the run
summary (``curation.json``), checked together. ``PublishConfig`` is the build step's
setting (standard library only)."""

from __future__ import annotations

from dataclasses import dataclass, field

DEFAULT_SALT = "pericurate-referrals-v1"


@dataclass(frozen=True)
class PublishConfig:
    """The build step's setting."""

    referral_salt: str = field(
        default=DEFAULT_SALT,
        metadata={"help": "Salt of the referrals (a referral is a function of film id and salt)."},
    )
