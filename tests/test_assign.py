import random
from collections import Counter

import pytest

from splits.assign import Group, assign_groups, target_counts


def _groups(n: int, seed: int) -> list[Group]:
    rng = random.Random(seed)
    groups = []
    for i in range(n):
        films = 1 if rng.random() < 0.85 else rng.randint(2, 6)
        grades = [rng.choice((3, 3, 4, 4, 5)) for _ in range(rng.randint(0, 2 * films))]
        count = Counter(grades)
        free = rng.randint(0, films) if not grades else 0
        groups.append(Group(f"{i:05d}", films, len(grades), count[3], count[4], count[5], free))
    return groups


def _totals(groups, assignment):
    totals = {s: Counter() for s in ("train", "validation", "test")}
    for g in groups:
        totals[assignment[g.group_id]].update(
            {"films": g.films, "lesions": g.lesions, "pai3": g.pai3, "pai4": g.pai4, "pai5": g.pai5}
        )
    return totals


def test_film_targets_are_met_exactly_and_grades_balance():
    groups = _groups(1500, seed=3)
    assignment = assign_groups(groups, (0.8, 0.1, 0.1), seed=0)
    totals = _totals(groups, assignment)
    targets = target_counts(sum(g.films for g in groups), (0.8, 0.1, 0.1))
    assert {s: totals[s]["films"] for s in totals} == targets
    for key in ("lesions", "pai3", "pai4", "pai5"):
        overall = sum(t[key] for t in totals.values())
        for split in ("validation", "test"):
            assert abs(totals[split][key] / overall - 0.1) < 0.03, (split, key)


def test_same_inputs_same_assignment_and_the_seed_matters():
    groups = _groups(400, seed=1)
    first = assign_groups(groups, seed=7)
    assert first == assign_groups(list(reversed(groups)), seed=7)
    assert first != assign_groups(groups, seed=8)


def test_a_group_too_large_for_a_small_split_goes_to_train():
    groups = [Group("big", 30, 10, 10)] + [Group(f"s{i:03d}", 1, 1, 1) for i in range(170)]
    assignment = assign_groups(groups, seed=0)
    assert assignment["big"] == "train"


def test_bad_fractions_are_refused():
    with pytest.raises(ValueError, match="summing to 1"):
        target_counts(10, (0.5, 0.5, 0.5))
