"""Reading a report out of a long hostile chat reply costs work linear in its length.

The work is counted, not timed: every character handed to the JSON decoder is counted (the
old reading decoded from every "{" to the end of the reply, so doubling such a reply
quadrupled the count). The reading also runs in a worker thread when called from the
rollout's async code."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest
from periapical_lesions import filing, reply
from periapical_lesions.reply import MAX_NESTING, parse_reply

REPORT = '{"lesions": [{"box": [0.1, 0.2, 0.3, 0.4], "pai": 3}]}'

HOSTILE = {
    "unclosed braces": "{",
    "unclosed report keys": '{"lesions": ',
    "unclosed arrays of objects": '{"a": [',
    "braces in strings": '{"{": "{',
    "closed nesting": '{"a": {"b": 1}, "c": [',
    "unclosed siblings": '{"box": [0.1, 0.2, 0.3, 0.4], "pai": 3}, {"x": ',
    "drafts": REPORT[:-2] + " ",
}


class CountingDecoder(json.JSONDecoder):
    """Counts the characters each decode is handed, from its start to the end of its text."""

    def __init__(self) -> None:
        super().__init__()
        self.work = 0

    def raw_decode(self, s: str, idx: int = 0):  # type: ignore[override]
        self.work += len(s) - idx
        return super().raw_decode(s, idx)


def decode_work(text: str, monkeypatch: pytest.MonkeyPatch) -> int:
    decoder = CountingDecoder()
    monkeypatch.setattr(reply, "_DECODER", decoder)
    parse_reply(text)
    return decoder.work


@pytest.mark.parametrize("unit", HOSTILE.values(), ids=HOSTILE.keys())
def test_decoding_work_grows_linearly(unit: str, monkeypatch: pytest.MonkeyPatch) -> None:
    copies = 20_000 // len(unit) + 1
    single = decode_work(unit * copies, monkeypatch)
    double = decode_work(unit * (2 * copies), monkeypatch)
    size = len(unit) * copies
    # Linear: twice the reply is at most about twice the work (quadratic would be 4x), and
    # each character is decoded at most about MAX_NESTING times.
    assert double <= 2.2 * single + 2 * MAX_NESTING**2, (single, double)
    assert single <= MAX_NESTING * size, (single, size)


@pytest.mark.parametrize("unit", HOSTILE.values(), ids=HOSTILE.keys())
def test_a_report_after_a_hostile_prefix_is_still_found(unit: str) -> None:
    text = unit * (50_000 // len(unit)) + "\n\nFinal report:\n```json\n" + REPORT + "\n```\n"
    assert parse_reply(text) == json.loads(REPORT)


def test_the_reply_is_read_off_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    threads: list[threading.Thread] = []

    def recording(text: str) -> dict | None:
        threads.append(threading.current_thread())
        return parse_reply(text)

    monkeypatch.setattr(filing, "parse_reply", recording)

    async def read() -> filing.Filing:
        return await filing.filed_in_reply("report: " + REPORT)

    result = asyncio.run(read())
    assert result.lesions == [{"box": [0.1, 0.2, 0.3, 0.4], "pai": 3}]
    assert threads and threads[0] is not threading.main_thread()
