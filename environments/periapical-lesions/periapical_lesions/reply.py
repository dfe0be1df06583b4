"""Reading a report out of a chat reply, for harnesses that answer in text instead of filing.

The last complete report in the reply wins: every JSON object with a "lesions" key counts as a
report (fenced or bare, inside prose or not, or nested in another object), and later drafts
replace earlier ones. The winner is returned as written; a malformed box or grade is judged
later, lesion by lesion, as for report.json.

The reading takes time linear in the reply's length, whatever the reply holds. Trying a JSON
decode at every "{" is quadratic (each failed attempt costs the distance to where it fails,
and the decoder's error message counts the lines before it): a 200 kB reply of unclosed
braces took seconds of CPU. Instead one left-to-right pass finds where each object opens and
closes (or stops being JSON: an unmatched bracket, a raw control character in a string, the
end of the reply), and each object is decoded from its own slice only. An object that fails
to decode at some position is never decoded again; of the objects inside it, those that close
before that position are valid and decoded once, those that open after it are tried in turn.
Objects nesting more than MAX_NESTING levels deep are not decoded as a whole (a report nests
four); the objects inside them still are.

The one difference from trying every "{": an object whose "{" sits inside what reads as a JSON
string of an enclosing object on the same line (say `{"say "{"lesions": []}`) is not found.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

MAX_NESTING = 32
"""Deeper objects are not decoded whole: a report is 4 levels deep ({lesions: [{box: []}]}),
and a cap keeps the cost per character bounded (a run of unclosed braces is retried at most
this many times)."""

_DECODER = json.JSONDecoder()
_STRUCTURE = re.compile(r'[{}\[\]"]|[^ \t\n\r{}\[\]":,0-9+\-.eEtrufalsnNIiy]')
"""Inside an object: a bracket, a quote, or a character JSON never has outside a string
(prose: a backtick, most letters; the letters of true, false, null, NaN and Infinity
are allowed), where no open object can still be JSON."""
_STRING = re.compile(r'"[^"\\\x00-\x1f]*(?:\\.[^"\\\x00-\x1f]*)*"?')
"""A JSON string from its opening quote; without its closing quote it stops being JSON where
the match ends (a raw control character, or the end of the reply)."""


@dataclass
class _Span:
    """One bracket of the reply: where it opens, where it stops (just after its closer, or
    where it stopped being JSON), whether it closed, and the objects inside it."""

    start: int
    opener: str
    stop: int = -1
    closed: bool = False
    height: int = 1
    objects: list[_Span] = field(default_factory=list)
    owner: _Span | None = None
    """The nearest object around this bracket (None at the top of the reply)."""


def _spans(text: str) -> list[_Span]:
    """The outermost objects of the reply, each with the objects inside it; one pass."""
    top: list[_Span] = []
    stack: list[_Span] = []

    def end_all(position: int) -> None:
        while stack:
            finish(stack.pop(), position, closed=False)

    def finish(span: _Span, stop: int, closed: bool) -> None:
        span.stop, span.closed = stop, closed
        if stack:
            stack[-1].height = max(stack[-1].height, span.height + 1)
        if span.opener == "{":
            (span.owner.objects if span.owner else top).append(span)

    def opened(position: int, opener: str) -> _Span:
        around = stack[-1] if stack else None
        owner = around if around is None or around.opener == "{" else around.owner
        return _Span(position, opener, owner=owner)

    position = text.find("{")
    while position != -1 and position < len(text):
        if not stack:
            position = text.find("{", position)
            if position == -1:
                break
            stack.append(opened(position, "{"))
            position += 1
            continue
        found = _STRUCTURE.search(text, position)
        if found is None:
            end_all(len(text))
            break
        char, position = found[0], found.start()
        if char == '"':
            string = _STRING.match(text, position)
            assert string is not None  # the pattern matches any opening quote
            if string[0].endswith('"') and len(string[0]) > 1:
                position = string.end()
            else:  # unterminated, or a raw control character: no open object is JSON
                end_all(string.end())
                position = string.end()
        elif char in "{[":
            stack.append(opened(position, char))
            position += 1
        elif char not in "}]":  # not JSON here: every open object ends before it
            end_all(position)
        elif (char == "}") == (stack[-1].opener == "{"):
            finish(stack.pop(), position + 1, closed=True)
            position += 1
        else:  # a closer that does not match: no open object is JSON
            end_all(position)
            position += 1
    end_all(len(text))
    return top


def _reports_in(value: object) -> list[dict]:
    """The report objects in a decoded value, in the order they appear, not looking inside a
    report for another."""
    found: list[dict] = []
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            if "lesions" in item:
                found.append(item)
                continue
            pending.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            pending.extend(reversed(item))
    return found


def parse_reply(text: str) -> dict | None:
    """The last report object in `text`, or None when the reply holds none."""
    last: tuple[int, dict] | None = None
    pending = list(reversed(_spans(text)))
    while pending:
        span = pending.pop()
        if span.height > MAX_NESTING:
            pending.extend(reversed(span.objects))
            continue
        try:
            value, end = _DECODER.raw_decode(text[span.start : span.stop])
        except json.JSONDecodeError as error:
            failed_at = span.start + error.pos
        except RecursionError:  # not expected under MAX_NESTING; the objects inside still count
            pending.extend(reversed(span.objects))
            continue
        else:
            if end == span.stop - span.start:
                reports = _reports_in(value)
                if reports and (last is None or span.start > last[0]):
                    last = (span.start, reports[-1])
                continue
            failed_at = span.start + end
        pending.extend(reversed(_inside_after_failure(span, failed_at)))
    return None if last is None else last[1]


def _inside_after_failure(span: _Span, failed_at: int) -> list[_Span]:
    """The objects inside `span` worth decoding once it failed at `failed_at`: those that
    closed before it (valid, as the decoder read them), and those that open at or after it.
    Objects still open at the failure fail there too and are only looked inside."""
    worth: list[_Span] = []
    pending = list(reversed(span.objects))
    while pending:
        inner = pending.pop()
        if inner.start >= failed_at or (inner.closed and inner.stop <= failed_at):
            worth.append(inner)
        else:
            pending.extend(reversed(inner.objects))
    return worth
