"""Inter-annotator agreement: the double-annotated films scored against each other with the
environment's own scorer, so the figure sits on the same scale as an agent's reward.

Each row of ``agreement.parquet`` is one radiograph filed twice; one annotation is taken as
the reference and the other as the report. Pass means reward exactly 1.0.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from curation.core.errors import PericurateError

if TYPE_CHECKING:
    from periapical_lesions.scoring import Interval

AGREEMENT_FILE = "agreement.parquet"
REQUIRED_COLUMNS = ("film_id", "other_film_id", "lesions", "other_lesions")


class AgreementError(PericurateError):
    """The agreement file is missing or not what the build writes."""


@dataclass(frozen=True)
class Agreement:
    pairs: int
    reward: Interval | None
    pass_rate: Interval | None


class ScoredLesion(TypedDict):
    """One lesion as the environment's scorer reads it."""

    box: list[float]
    pai: int


def _lesions(rows: list[dict[str, Any]]) -> list[ScoredLesion]:
    """A lesion column's parquet rows as the scorer reads them."""
    return [{"box": [float(v) for v in les["box"]], "pai": int(les["pai"])} for les in rows]


def agreement(path: Path, seed: int = 0, resamples: int = 10_000) -> Agreement:
    """Reward and pass rate of one annotation scored against the other, with 95% intervals;
    no intervals when the build has no double-annotated films. pyarrow and the scorer are
    imported here, so ``pericurate agreement`` with nothing to do starts without them."""
    import pyarrow.parquet as pq
    from periapical_lesions.scoring import bootstrap_ci, score

    if not path.is_file():
        raise AgreementError(f"{path}: no agreement file; run `pericurate build` first.")
    table = pq.ParquetFile(path).read()
    missing = [c for c in REQUIRED_COLUMNS if c not in table.column_names]
    if missing:
        raise AgreementError(f"{path}: missing column(s) {', '.join(missing)}.")
    scores = [
        score(_lesions(row["lesions"]), {"lesions": _lesions(row["other_lesions"])})
        for row in table.to_pylist()
    ]
    if not scores:
        return Agreement(0, None, None)
    rewards = [s.reward for s in scores]
    passes = [float(s.reward == 1.0) for s in scores]
    return Agreement(
        len(scores), bootstrap_ci(rewards, seed, resamples), bootstrap_ci(passes, seed, resamples)
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
