"""Runs the declared chain (``curation.chain.chain``) on a source with an executor
(``curation.chain.executors``), shows its progress, and leaves the records of the step it stopped
after in ``BUILD/work/NN-step.parquet`` (written here and nowhere else), and each step's wall
and CPU time in ``BUILD/work/times.json`` (the one output that differs between equal runs:
nothing reads it but people and ``make bench``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from curation.chain.chain import CHAIN, Executor, bound_settings, checkpoint_name, through
from curation.chain.executors import LocalExecutor
from curation.chain.run import Products, Run, StepTime
from curation.chain.settings import Settings
from curation.core.atomic import write_json
from curation.core.parallel import LocalMap
from curation.core.progress import progress_bars
from curation.core.records import Fate, Kind, SourceRecord, write_records
from curation.decisions import CURATOR_REJECTED
from curation.publish.summary import Summary
from curation.source.source import Source

__all__ = ["Outcome", "Settings", "Source", "curate"]  # what a caller of curate needs
TIMES_FILE = "times.json"  # below BUILD/work


class StepTimes(TypedDict):
    """One step's wall and CPU time in ``times.json``."""

    step: str
    wall_s: float
    cpu_s: float
    cpu_ms_per_image: float


class TimesReport(TypedDict):
    """``BUILD/work/times.json``."""

    source_images: int
    steps: list[StepTimes]


@dataclass(frozen=True)
class Outcome:
    """What a run produced: the records, the summary (only when the run built the dataset)
    and every product of the steps that ran."""

    records: list[SourceRecord]
    summary: Summary | None
    products: Products
    times: list[StepTime]

    @property
    def rejected(self) -> int:
        """Files the chain rejected: the films the curator rejected, and their annotations,
        are decisions, not faults of the source."""
        curator = {r.path for r in self.records if r.reason.startswith(CURATOR_REJECTED)}
        return sum(
            1
            for r in self.records
            if r.fate is Fate.rejected and r.path not in curator and r.related not in curator
        )

    def times_report(self) -> TimesReport:
        """Each step's wall and CPU seconds, and CPU milliseconds per source image (the unit
        the decode limit is stated in: about 2 ms of one core per film at draft scale)."""
        images = sum(1 for r in self.records if r.kind is Kind.image)
        return {
            "source_images": images,
            "steps": [
                {
                    "step": t.step,
                    "wall_s": round(t.wall_s, 3),
                    "cpu_s": round(t.cpu_s, 3),
                    "cpu_ms_per_image": round(1000 * t.cpu_s / max(images, 1), 3),
                }
                for t in self.times
            ],
        }


def curate(
    source: Source,
    out: Path,
    settings: Settings,
    stop_after: str = CHAIN[-1].name,
    executor: Executor | None = None,
) -> Outcome:
    """Run the chain through ``stop_after`` (local by default), whose records go to
    ``out/work``."""
    steps = through(stop_after)
    with progress_bars() as track:
        run = Run(source, out, bound_settings(settings), track, LocalMap())
        executor = executor or LocalExecutor()
        products = executor.run(steps, run)
        # products are keyed by name; "records" is the index step's list[SourceRecord]
        records: list[SourceRecord] = products["records"]  # type: ignore[assignment]
        write_records(records, out / "work" / checkpoint_name(steps[-1]))
    summary = products.get("summary")
    outcome = Outcome(
        records, summary if isinstance(summary, Summary) else None, products, executor.times
    )
    write_json(out / "work" / TIMES_FILE, outcome.times_report())
    return outcome
