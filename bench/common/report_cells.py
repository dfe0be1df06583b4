"""What every row of the ``make bench`` table says in its status column."""

from __future__ import annotations


def met(ok: bool | None) -> str:
    """The status of a figure: met, MISSED, or n/a when it has no goal to meet."""
    return "n/a" if ok is None else ("met" if ok else "MISSED")
