"""The referral generator behind every task's referral.txt (``curation.publish.referrals``):
the slip is fixed per film and carries no clinical hint, as the audit's own vocabulary of hints
(``curation.leaks.referrals.REFERRAL_HINTS``) reads it."""

from __future__ import annotations

from curation.leaks.referrals import hints_in
from curation.publish.referrals import REASONS, referral_for


def test_a_referral_is_fixed_by_film_id_and_salt():
    assert referral_for("00011") == referral_for("00011")
    assert referral_for("00011") != referral_for("00011", salt="other")
    assert len({referral_for(f"{i:05d}1").patient_code for i in range(500)}) == 500


def test_no_reason_carries_a_hint():
    for reason in REASONS:
        assert hints_in(reason) == [], reason


def test_no_slip_carries_a_hint_in_any_field():
    """Every text field of 2,000 slips (codes, ages and sexes vary per film) as the build
    writes them, searched as the audit searches the published referrals."""
    for number in range(2000):
        row = referral_for(f"{number:05d}1").as_row()
        for field, value in row.items():
            if isinstance(value, str):
                assert hints_in(value) == [], (number, field, value)


def test_the_vocabulary_names_a_hint_of_each_kind_a_slip_must_not_carry():
    found = hints_in("Pain and swelling, lower left molar (tooth 36), PAI 4 periapical lesion")
    assert {category for category, _ in found} == {
        "symptom",
        "side",
        "tooth",
        "tooth number",
        "grade",
        "finding",
    }


def test_text_renders_every_field():
    referral = referral_for("016094")
    for value in (referral.patient_code, str(referral.age), referral.sex, referral.reason):
        assert value in referral.text
    assert 18 <= referral.age <= 80 and referral.sex in ("F", "M")
