"""Referrals: the slip that comes with each film, free of any hint of the answer.

A referral is a pure function of the film id and a recorded salt: it is drawn without
looking at the labels, and its patient code is never derived from the source's patient
numbers. Reasons come from a fixed vocabulary that names no tooth, side, symptom, grade or
finding.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass

from curation.publish import DEFAULT_SALT

REASONS = (
    "Routine dental examination",
    "New patient assessment",
    "Periodic recall examination",
    "Pre-orthodontic assessment",
    "Pre-prosthetic assessment",
    "General treatment planning",
)
SEXES = ("F", "M")
AGE_RANGE = (18, 80)
CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"


@dataclass(frozen=True)
class Referral:
    """The referral slip of one film."""

    patient_code: str
    age: int
    sex: str
    reason: str

    @property
    def text(self) -> str:
        """The rendered slip the agent reads."""
        return (
            "RADIOLOGY REFERRAL - PANORAMIC RADIOGRAPH\n"
            f"Patient code: {self.patient_code}\n"
            f"Age: {self.age}\n"
            f"Sex: {self.sex}\n"
            f"Reason for referral: {self.reason}\n"
        )

    def as_row(self) -> dict[str, object]:
        """The referral as a dataset row's ``referral`` value, its rendered text included."""
        return {
            "patient_code": self.patient_code,
            "age": self.age,
            "sex": self.sex,
            "reason": self.reason,
            "text": self.text,
        }


def referral_for(film_id: str, salt: str = DEFAULT_SALT) -> Referral:
    """The referral of one film; the same id and salt always give the same referral."""
    seed = hashlib.sha256(f"{salt}\x00{film_id}".encode()).digest()
    rng = random.Random(seed)
    code = "".join(rng.choice(CODE_ALPHABET) for _ in range(6))
    return Referral(
        patient_code=f"PT-{code}",
        age=rng.randint(*AGE_RANGE),
        sex=rng.choice(SEXES),
        reason=rng.choice(REASONS),
    )
