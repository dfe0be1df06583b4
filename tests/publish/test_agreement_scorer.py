"""The agreement figure's scorer is injected: the toolkit names what it needs
(``AgreementScorer``) and the periapical environment registers its scorer under an entry-point
group, so ``curation`` never imports an environment."""

from __future__ import annotations

import importlib.metadata
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curation.publish.agreement import (
    SCORER_GROUP,
    AgreementError,
    ScoredLesion,
    agreement,
    registered_scorer,
)

BOX = [0.1, 0.1, 0.3, 0.3]


def write_pairs(path: Path, pairs: int) -> Path:
    lesions = [{"box": BOX, "pai": 3}]
    rows = [
        {"film_id": f"{i}", "other_film_id": f"{i}b", "lesions": lesions, "other_lesions": lesions}
        for i in range(pairs)
    ]
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


@dataclass(frozen=True)
class Figure:
    mean: float
    low: float
    high: float


@dataclass(frozen=True)
class Graded:
    reward: float


class HalfScorer:
    """Gives every report half the reward and records what it was handed."""

    def __init__(self) -> None:
        self.scored: list[tuple[list[ScoredLesion], Mapping[str, list[ScoredLesion]]]] = []
        self.bootstrapped: list[tuple[list[float], int, int]] = []

    def score(
        self, reference: list[ScoredLesion], report: Mapping[str, list[ScoredLesion]]
    ) -> Graded:
        self.scored.append((reference, report))
        return Graded(0.5)

    def bootstrap_ci(self, values: Sequence[float], seed: int, n: int) -> Figure:
        self.bootstrapped.append((list(values), seed, n))
        return Figure(sum(values) / len(values), -1.0, 2.0)


def test_the_scorer_given_is_the_one_used(tmp_path: Path) -> None:
    scorer = HalfScorer()
    result = agreement(write_pairs(tmp_path / "a.parquet", 3), 7, 50, scorer=scorer)
    assert len(scorer.scored) == 3
    assert scorer.scored[0] == ([{"box": BOX, "pai": 3}], {"lesions": [{"box": BOX, "pai": 3}]})
    assert scorer.bootstrapped == [([0.5] * 3, 7, 50), ([0.0] * 3, 7, 50)]
    assert result.reward == Figure(0.5, -1.0, 2.0) and result.pass_rate == Figure(0.0, -1.0, 2.0)


def test_the_periapical_environment_registers_its_scorer() -> None:
    import periapical_lesions.scoring

    names = [entry.name for entry in importlib.metadata.entry_points(group=SCORER_GROUP)]
    assert names == ["periapical-lesions"]
    assert registered_scorer() is periapical_lesions.scoring


def test_without_the_argument_the_registered_scorer_scores(tmp_path: Path) -> None:
    import periapical_lesions.scoring

    path = write_pairs(tmp_path / "a.parquet", 4)
    assert agreement(path, resamples=100) == agreement(
        path, resamples=100, scorer=periapical_lesions.scoring
    )


@pytest.mark.parametrize(
    ("registered", "message"),
    [
        ([], "no agreement scorer is installed"),
        (["a", "b"], "2 agreement scorers are installed, a (json), b (json): keep one."),
        (["a"], "the agreement scorer a (json) has no score and bootstrap_ci."),
    ],
)
def test_a_missing_doubled_or_unfit_scorer_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, registered: list[str], message: str
) -> None:
    entries = [importlib.metadata.EntryPoint(name, "json", SCORER_GROUP) for name in registered]
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: entries)
    with pytest.raises(AgreementError, match="^" + re.escape(message)):
        agreement(write_pairs(tmp_path / "a.parquet", 2))
