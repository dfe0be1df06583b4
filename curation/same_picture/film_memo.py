"""What the frame check makes of one film alone (the film at the compare size, its anatomy
band), remembered by the process that checks: a film is in several shortlisted pairs, and what
is made of it alone is the same in each."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

import numpy as np

PER_FILM_REMEMBERED = 128  # scaled and blurred read-only films a process keeps

_REMEMBERED: OrderedDict[tuple[str, int, int], tuple[np.ndarray, np.ndarray]] = OrderedDict()


def per_film(
    name: str, image: np.ndarray, side: int, compute: Callable[[], np.ndarray]
) -> np.ndarray:
    """``compute()``, what ``name`` makes of ``image`` at ``side``, remembered by this process
    for a read-only ``image`` (the frame step's decoded films and what is made of them): a film
    is in several pairs, and what the check makes of it alone is the same in each. A writable
    image may change between calls, so it is never remembered. The result is read-only."""
    if image.flags.writeable:
        return compute()
    key = (name, id(image), side)
    held = _REMEMBERED.get(key)
    if held is not None and held[0] is image:  # the same living array, not a reused id
        _REMEMBERED.move_to_end(key)
        return held[1]
    found = compute()
    found.flags.writeable = False
    _REMEMBERED[key] = (image, found)
    if len(_REMEMBERED) > PER_FILM_REMEMBERED:
        _REMEMBERED.popitem(last=False)
    return found


def forget_films() -> None:
    """Let go of every film ``per_film`` remembers (a driver that checked a pair itself)."""
    _REMEMBERED.clear()


def remembered() -> int:
    """How many results this process remembers (none once ``forget_films`` has run)."""
    return len(_REMEMBERED)
