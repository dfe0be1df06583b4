"""Reading a report out of a chat reply, for harnesses that answer in text instead of filing.

The last complete report in the reply wins: every JSON object with a "lesions" key counts as a
report (fenced or bare, inside prose or not), and later drafts replace earlier ones. The
winner is returned as written; a malformed box or grade makes it invalid for the scorer,
which then counts the reply as no findings, as it would for an invalid report.json.
"""

from __future__ import annotations

import json

_DECODER = json.JSONDecoder()


def parse_reply(text: str) -> dict | None:
    """The last report object in `text`, or None when the reply holds none."""
    last: dict | None = None
    position = text.find("{")
    while position != -1:
        try:
            value, end = _DECODER.raw_decode(text, position)
        except (ValueError, RecursionError):  # a document nested too deeply is no report
            position = text.find("{", position + 1)
            continue
        if isinstance(value, dict) and "lesions" in value:
            last = value
            position = text.find("{", end)
        else:
            position = text.find("{", position + 1)
    return last
