"""Parsing `clinic_action` arguments, which are hostile input: bounded before and after.

The agent controls every byte of `action` and `arguments`. Before parsing, the text is
capped in length; the JSON decoder then refuses duplicate keys and non-finite numbers (the
constants `NaN` and `Infinity`, and literals such as `1e999` that overflow to infinity), and
its own failures (huge integers, nesting deep enough to exhaust the stack) become tool
errors. After parsing, values nested deeper than any action needs are refused, so nothing
stored in the audit log can break copying, serialising or scoring later. Values quoted
back in messages are shortened, so a reply never echoes a huge input.
"""

from __future__ import annotations

import json
import math
from typing import Any

MAX_ARGUMENTS_CHARS = 8_000
"""Far above the longest legitimate call (a handoff is well under 1,000 characters)."""
MAX_DEPTH = 3
"""object -> list -> string is the deepest shape any action takes."""
SHOWN_CHARS = 40
"""How much of an agent-supplied value a message quotes."""


class ToolError(ValueError):
    """A malformed or invalid call; reported to the agent, never a crash."""


def shown(value: object) -> str:
    """A short, ASCII-safe quotation of an agent-supplied value for a message."""
    if not isinstance(value, str):
        return f"a {type(value).__name__}"
    if len(value) <= SHOWN_CHARS:
        return ascii(value)
    return f"{value[:SHOWN_CHARS]!a}... ({len(value):,} characters)"


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        repeated = sorted({key for key in keys if keys.count(key) > 1})
        raise ToolError(f"field {shown(repeated[0])} is given more than once")
    return dict(pairs)


def _no_constant(name: str) -> None:
    raise ToolError(f"{name} is not a valid JSON value")


def _finite_float(text: str) -> float:
    """A JSON number as a float, refused when it overflows to infinity (`1e999`): what the
    audit log stores must stay strict JSON (`json.dumps(..., allow_nan=False)`)."""
    value = float(text)
    if not math.isfinite(value):
        raise ToolError(f"{shown(text)} is too large a number")
    return value


def _depth_exceeds(value: Any, limit: int) -> bool:
    """Whether `value` nests deeper than `limit`; stops descending once it does."""
    if not isinstance(value, dict | list):
        return False
    if limit == 0:
        return True
    children = value.values() if isinstance(value, dict) else value
    return any(_depth_exceeds(child, limit - 1) for child in children)


def parse_object(arguments: object) -> dict[str, Any]:
    """The JSON object in `arguments`, or a ToolError with a one-sentence reason."""
    if not isinstance(arguments, str):
        raise ToolError("arguments must be a JSON-encoded object in a string")
    if len(arguments) > MAX_ARGUMENTS_CHARS:
        raise ToolError(
            f"arguments are {len(arguments):,} characters long; the limit is "
            f"{MAX_ARGUMENTS_CHARS:,}"
        )
    try:
        parsed = json.loads(
            arguments,
            object_pairs_hook=_no_duplicates,
            parse_constant=_no_constant,
            parse_float=_finite_float,
        )
    except json.JSONDecodeError as error:
        raise ToolError(f"arguments must be a JSON-encoded object: {error.msg}") from None
    except RecursionError:
        raise ToolError("arguments are nested too deeply") from None
    except ToolError:
        raise
    except ValueError:  # e.g. an integer longer than Python will convert
        raise ToolError("arguments hold a number too long to read") from None
    if not isinstance(parsed, dict):
        raise ToolError('arguments must be a JSON object, e.g. \'{"question": "reason"}\'')
    if _depth_exceeds(parsed, MAX_DEPTH - 1):
        raise ToolError(f"arguments are nested deeper than {MAX_DEPTH} levels")
    if not all(_encodable(text) for text in _strings_in(parsed)):
        raise ToolError("arguments hold text that is not valid Unicode")
    return parsed


def _strings_in(value: Any) -> list[str]:
    """Every key and string value in a (depth-checked) parsed object."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [*value, *(text for child in value.values() for text in _strings_in(child))]
    if isinstance(value, list):
        return [text for child in value for text in _strings_in(child)]
    return []


def _encodable(text: str) -> bool:
    """False for lone surrogates, which JSON allows but UTF-8 output cannot carry."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
