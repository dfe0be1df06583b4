from periapical_lesions.reply import parse_reply
from periapical_lesions.scoring import score

REFERENCE = [{"box": [0.1, 0.1, 0.2, 0.2], "pai": 4}]


def test_fenced_json() -> None:
    reply = 'Findings below.\n```json\n{"lesions": [{"box": [0.1, 0.1, 0.2, 0.2], "pai": 4}]}\n```'
    assert parse_reply(reply) == {"lesions": REFERENCE}


def test_bare_json_inside_prose() -> None:
    reply = 'I see one lesion: {"lesions": [{"box": [0.1, 0.1, 0.2, 0.2], "pai": 4}]} - done.'
    assert score(REFERENCE, parse_reply(reply)).reward == 1.0


def test_last_of_several_drafts_wins() -> None:
    reply = (
        'Draft: {"lesions": [{"box": [0.1, 0.1, 0.2, 0.2], "pai": 4}]}\n'
        "On reflection the film is clean:\n"
        '```json\n{"lesions": []}\n```\n'
        'Unrelated note {"tooth": 36} and a broken one {"lesions": [ '
    )
    assert parse_reply(reply) == {"lesions": []}


def test_report_nested_in_another_object_is_found() -> None:
    assert parse_reply('{"report": {"lesions": []}, "confidence": 0.4}') == {"lesions": []}


def test_malformed_last_report_wins_and_scores_as_no_findings() -> None:
    reply = (
        '{"lesions": [{"box": [0.1, 0.1, 0.2, 0.2], "pai": 4}]}\n'
        'final: {"lesions": [{"box": [0.1, 0.1, 0.2], "pai": "4"}]}'
    )
    parsed = parse_reply(reply)
    assert parsed == {"lesions": [{"box": [0.1, 0.1, 0.2], "pai": "4"}]}
    result = score(REFERENCE, parsed)
    assert not result.report_valid and result.reward == 0.0


def test_no_report() -> None:
    assert parse_reply('No JSON here, only {braces} and {"other": 1}.') is None
    assert parse_reply("") is None
