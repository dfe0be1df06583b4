"""Inter-annotator agreement: the double-annotated films scored against each other with the
environment's own scorer, so the figure sits on the same scale as an agent's reward.

Each row of ``agreement.parquet`` is one radiograph filed twice; one annotation is taken as
the reference and the other as the report. Pass means reward exactly 1.0.

The toolkit never imports an environment: it names what it needs of a scorer
(``AgreementScorer``), and an environment registers one under the entry-point group
``pericurate.agreement_scorers`` (the periapical environment registers its
``periapical_lesions.scoring``), found when the figure is computed (``registered_scorer``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypedDict, runtime_checkable

from curation.core.errors import PericurateError

AGREEMENT_FILE = "agreement.parquet"
REQUIRED_COLUMNS = ("film_id", "other_film_id", "lesions", "other_lesions")
SCORER_GROUP = "pericurate.agreement_scorers"


class AgreementError(PericurateError):
    """The agreement file is missing or not what the build writes, or no scorer is installed."""


class Interval(Protocol):
    """A mean with its confidence interval, as the scorer's bootstrap gives it."""

    @property
    def mean(self) -> float:
        """The mean."""

    @property
    def low(self) -> float:
        """The lower bound of the interval."""

    @property
    def high(self) -> float:
        """The upper bound of the interval."""


class Scored(Protocol):
    """One report's score; the agreement reads its reward alone."""

    @property
    def reward(self) -> float:
        """The reward, 0.0 to 1.0."""


@dataclass(frozen=True)
class Agreement:
    """The agreement over ``pairs`` double-annotated films: mean reward and pass rate
    with their intervals, ``None`` without pairs."""

    pairs: int
    reward: Interval | None
    pass_rate: Interval | None


class ScoredLesion(TypedDict):
    """One lesion as the environment's scorer reads it."""

    box: list[float]
    pai: int


@runtime_checkable
class AgreementScorer(Protocol):
    """What the agreement needs of an environment's scorer (a module or an object)."""

    def score(
        self, reference: list[ScoredLesion], report: Mapping[str, list[ScoredLesion]]
    ) -> Scored:
        """Score ``report`` (its ``lesions``) against the ``reference`` lesions.

        Args:
            reference: the lesions taken as the truth.
            report: the filed report, its lesions under ``"lesions"``.

        Returns:
            The score, whose ``reward`` is 1.0 for a report that agrees in full.
        """
        ...

    def bootstrap_ci(self, values: Sequence[float], seed: int, n: int) -> Interval:
        """The mean of ``values`` with its bootstrap confidence interval.

        Args:
            values: one figure per film.
            seed: the resampling's seed (same seed, same interval).
            n: how many resamples.

        Returns:
            The mean with its interval.
        """
        ...


def registered_scorer() -> AgreementScorer:
    """The scorer an installed environment registers under ``SCORER_GROUP``.

    Returns:
        The one registered scorer, loaded.

    Raises:
        AgreementError: none is registered, more than one is, or the one registered lacks
            ``score`` or ``bootstrap_ci``.
    """
    from importlib.metadata import entry_points

    found = sorted(entry_points(group=SCORER_GROUP), key=lambda entry: entry.name)
    if not found:
        raise AgreementError(
            f"no agreement scorer is installed: an environment registers one under the "
            f"entry-point group {SCORER_GROUP} (periapical-lesions does; reinstall it)."
        )
    if len(found) > 1:
        names = ", ".join(f"{entry.name} ({entry.value})" for entry in found)
        raise AgreementError(f"{len(found)} agreement scorers are installed, {names}: keep one.")
    scorer = found[0].load()
    if not isinstance(scorer, AgreementScorer):
        raise AgreementError(
            f"the agreement scorer {found[0].name} ({found[0].value}) has no score and "
            "bootstrap_ci."
        )
    return scorer


def _lesions(rows: list[dict[str, Any]]) -> list[ScoredLesion]:
    """A lesion column's parquet rows as the scorer reads them."""
    return [{"box": [float(v) for v in les["box"]], "pai": int(les["pai"])} for les in rows]


def agreement(
    path: Path, seed: int = 0, resamples: int = 10_000, scorer: AgreementScorer | None = None
) -> Agreement:
    """Reward and pass rate of one annotation scored against the other, with 95% intervals;
    no intervals when the build has no double-annotated films. pyarrow and the scorer are
    imported here, so ``pericurate agreement`` with nothing to do starts without them.

    Args:
        path: the build's ``agreement.parquet``.
        seed: the bootstrap's seed.
        resamples: how many bootstrap resamples.
        scorer: the scorer to use; ``None`` for the one an environment registers.

    Returns:
        The number of pairs and, when there are any, both figures with their intervals.

    Raises:
        AgreementError: the file is missing or lacks a column, or no scorer is installed.
    """
    import pyarrow.parquet as pq

    if not path.is_file():
        raise AgreementError(f"{path}: no agreement file; run `pericurate build` first.")
    table = pq.ParquetFile(path).read()
    missing = [c for c in REQUIRED_COLUMNS if c not in table.column_names]
    if missing:
        raise AgreementError(f"{path}: missing column(s) {', '.join(missing)}.")
    scorer = scorer or registered_scorer()
    scores = [
        scorer.score(_lesions(row["lesions"]), {"lesions": _lesions(row["other_lesions"])})
        for row in table.to_pylist()
    ]
    if not scores:
        return Agreement(0, None, None)
    rewards = [s.reward for s in scores]
    passes = [float(s.reward == 1.0) for s in scores]
    return Agreement(
        len(scores),
        scorer.bootstrap_ci(rewards, seed, resamples),
        scorer.bootstrap_ci(passes, seed, resamples),
    )


def describe(result: Agreement) -> str:
    """One line for people: the figures with their intervals, or why there are none."""
    if result.reward is None or result.pass_rate is None:
        return "no double-annotated films in this build, so no agreement figure."
    r, p = result.reward, result.pass_rate
    return (
        f"reward {r.mean:.2f} (95% CI {r.low:.2f}-{r.high:.2f}), pass rate {p.mean:.0%} "
        f"(95% CI {p.low:.0%}-{p.high:.0%}) on {result.pairs} double-annotated films"
    )
