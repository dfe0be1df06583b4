"""The words a split is described in, defined once: the split names, and the label figures
that assignment balances and that the summary, the card and the CLI report per split.

Standard library only, so every reader (the chain, the card, the command line's tables) can
import it for nothing."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, fields

SPLITS: tuple[str, ...] = ("train", "validation", "test")


@dataclass(frozen=True)
class Figures:
    """Films, lesions, lesions per PAI grade and lesion-free films of a set of films."""

    films: int = 0
    lesions: int = 0
    pai3: int = 0
    pai4: int = 0
    pai5: int = 0
    lesion_free: int = 0

    @classmethod
    def of(cls, films: Iterable[Iterable[int]]) -> Figures:
        """The figures of films given as their lesions' PAI grades, one iterable per film."""
        per_film = [list(grades) for grades in films]
        grades = Counter(grade for film in per_film for grade in film)
        return cls(
            films=len(per_film),
            lesions=sum(grades.values()),
            pai3=grades[3],
            pai4=grades[4],
            pai5=grades[5],
            lesion_free=sum(1 for film in per_film if not film),
        )


STAT_NAMES: tuple[str, ...] = tuple(field.name for field in fields(Figures))
