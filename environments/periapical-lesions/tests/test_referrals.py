"""The referral generator behind every task's referral.txt (curation/publish/referrals.py): the
slip is
fixed per film and carries no clinical hint. Kept with the environment's tests so the published
test command covers it; the generator itself stays in the curation toolkit."""

import re

from curation.publish.referrals import REASONS, referral_for

HINT_WORDS = re.compile(
    r"\b(tooth|teeth|molar|premolar|incisor|canine|left|right|upper|lower|quadrant|pain|"
    r"swelling|abscess|lesion|periapical|grade|pai|radiolucen\w*|infection|fistula)\b|\d",
    re.IGNORECASE,
)


def test_a_referral_is_fixed_by_film_id_and_salt():
    assert referral_for("00011") == referral_for("00011")
    assert referral_for("00011") != referral_for("00011", salt="other")
    assert len({referral_for(f"{i:05d}1").patient_code for i in range(500)}) == 500


def test_reasons_carry_no_hint():
    for reason in REASONS:
        assert not HINT_WORDS.search(reason), reason


def test_text_renders_every_field():
    referral = referral_for("016094")
    for value in (referral.patient_code, str(referral.age), referral.sex, referral.reason):
        assert value in referral.text
    assert 18 <= referral.age <= 80 and referral.sex in ("F", "M")
