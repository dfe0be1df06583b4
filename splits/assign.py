"""Assign whole look-alike clusters to train / validation / test.

A pure function of the groups' label statistics, the target fractions and a seed (compare
scikit-learn's group splitters): the same inputs always give the same assignment. Groups go
largest first (ties in a seeded random order) to the split where they leave the film, lesion
and grade counts closest to their share of the targets so far (so every split grows in
proportion); once the films left are only enough to fill validation and test, they go
there; validation and test never exceed their film
targets, and a group too large for a small split goes to train.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import numpy as np

from splits import check_fractions
from splits.figures import SPLITS, STAT_NAMES, Figures

STAT_WEIGHTS = np.array([4.0, 1.0, 1.0, 1.0, 1.0, 1.0])
MAX_SMALL_SHARE = 0.25  # a group may fill at most this share of validation's or test's target


@dataclass(frozen=True)
class _Named:
    group_id: str


@dataclass(frozen=True)
class Group(Figures, _Named):
    """A cluster's figures: ``Group(group_id, films, lesions, pai3, pai4, pai5, lesion_free)``
    (a dataclass takes its bases' fields from the last base first, so ``group_id`` leads)."""

    def vector(self) -> np.ndarray:
        """The group's figures in ``STAT_NAMES`` order, as the assignment weighs them."""
        return np.array([getattr(self, name) for name in STAT_NAMES], dtype=np.float64)


def target_counts(n_films: int, fractions: tuple[float, float, float]) -> dict[str, int]:
    """Film targets: validation and test rounded, train takes the rest."""
    check_fractions(fractions)
    validation = round(n_films * fractions[1])
    test = round(n_films * fractions[2])
    return dict(zip(SPLITS, (n_films - validation - test, validation, test), strict=True))


@dataclass(frozen=True)
class SplitTargets:
    """What an assignment aims at: the shares of train, validation and test, and each split's
    film target for the films assigned (``target_counts``)."""

    fractions: tuple[float, float, float]
    films: dict[str, int]

    @classmethod
    def of(cls, n_films: int, fractions: tuple[float, float, float]) -> SplitTargets:
        """The targets of ``n_films`` films split by ``fractions``."""
        return cls(fractions, target_counts(n_films, fractions))


def smallest_source(fractions: tuple[float, ...]) -> int:
    """The fewest films for which each small split's target can take a one-film group
    (``MAX_SMALL_SHARE`` of it at least one film): 35 with the default fractions."""
    needed = math.ceil(1 / MAX_SMALL_SHARE)
    films = 1
    while any(f > 0 and round(films * f) < needed for f in fractions[1:]):
        films += 1
    return films


def empty_splits_problem(films: dict[str, int], fractions: tuple[float, ...]) -> str | None:
    """Why an assignment cannot be published (one sentence with the numbers), or None: a
    split left without films, which happens below ``smallest_source`` films."""
    empty = [split for split in SPLITS if not films.get(split)]
    if not empty:
        return None
    total = sum(films.values())
    return (
        f"{_would_be_empty(films, empty)}, too few for the splits: a look-alike group may "
        f"fill at most {MAX_SMALL_SHARE:.0%} of a small split's target, so about "
        f"{smallest_source(fractions)} films or more are needed."
        if total < smallest_source(fractions)
        else f"{_would_be_empty(films, empty)}."
    )


def assignment_problem(
    groups: list[Group], assignment: dict[str, str], fractions: tuple[float, float, float]
) -> str | None:
    """Why ``assignment`` cannot be published, naming the cause, or None. A split is left
    empty either because the source has too few films (``empty_splits_problem``) or, with
    enough films, because they sit in look-alike groups too large for the small splits,
    which go to train whole (a large look-alike distance, or visits joined into one)."""
    films = {split: 0 for split in SPLITS}
    for group in groups:
        films[assignment[group.group_id]] += group.films
    empty = [split for split in SPLITS if not films[split]]
    total = sum(films.values())
    if not empty or total < smallest_source(fractions):
        return empty_splits_problem(films, fractions)
    small = [split for split in empty if split != "train"]
    targets = target_counts(total, fractions)
    cap = min((math.floor(MAX_SMALL_SHARE * targets[split]) for split in small), default=0)
    large = sorted((g for g in groups if g.films > cap), key=lambda g: (-g.films, g.group_id))
    if not small or not large:
        return empty_splits_problem(films, fractions)
    held = sum(g.films for g in large)
    return (
        f"{_would_be_empty(films, empty)}: {held} of them are in look-alike groups of more "
        f"than {cap} {'film' if cap == 1 else 'films'}, the most a group may put in "
        f"{' or '.join(small)} ({MAX_SMALL_SHARE:.0%} of its target), so they go to train "
        f"whole (the largest, group {large[0].group_id}, holds {large[0].films} films; groups join "
        "films within the look-alike distance and, with --link-visits, every visit of one "
        "patient)."
    )


def _would_be_empty(films: dict[str, int], empty: list[str]) -> str:
    counts = ", ".join(f"{split} {films.get(split, 0)}" for split in SPLITS)
    return (
        f"the source keeps {sum(films.values())} films, but {' and '.join(empty)} would be "
        f"empty ({counts})"
    )


def assign_groups(
    groups: list[Group], fractions: tuple[float, float, float] = (0.8, 0.1, 0.1), seed: int = 0
) -> dict[str, str]:
    """``group_id -> split`` for every group."""
    if len({g.group_id for g in groups}) != len(groups):
        raise ValueError("group ids must be unique")
    totals = sum((g.vector() for g in groups), np.zeros(len(STAT_NAMES)))
    films = target_counts(int(totals[0]), fractions)
    targets = np.array([fractions[i] * totals for i in range(3)])
    targets[:, 0] = [films[s] for s in SPLITS]
    current = np.zeros_like(targets)
    rng = random.Random(seed)
    tiebreak = {g.group_id: rng.random() for g in sorted(groups, key=lambda g: g.group_id)}
    order = sorted(groups, key=lambda g: (-g.films, tiebreak[g.group_id], g.group_id))
    scale = STAT_WEIGHTS / np.maximum(totals, 1.0) ** 2
    assignment = {}
    for group in order:
        stats = group.vector()
        due = targets * (current[:, 0].sum() + group.films) / max(totals[0], 1.0)
        unplaced = totals[0] - current[:, 0].sum()
        small_room = targets[1:, 0] - current[1:, 0]
        must_fill = unplaced <= small_room.sum() and (small_room >= group.films).any()
        fits = [
            not must_fill,
            *(
                current[s, 0] + group.films <= targets[s, 0]
                and group.films <= MAX_SMALL_SHARE * targets[s, 0]
                for s in (1, 2)
            ),
        ]
        best, best_cost = 0, np.inf
        for s in (s for s in range(3) if fits[s]):
            trial = current.copy()
            trial[s] += stats
            cost = float(np.sum((trial - due) ** 2 * scale))
            if cost < best_cost:
                best, best_cost = s, cost
        current[best] += stats
        assignment[group.group_id] = SPLITS[best]
    return assignment
