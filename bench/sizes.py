"""What ``make bench``'s parts measure on (``Sizes``), and the tiny sizes of its smoke test
(``TINY``), apart from ``bench.run`` that runs the parts on them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bench.common.corpus import CORPUS_DIR
from bench.scale import audit_memory, cost, driver_slope, lists_memory

ISSUE_22_BASELINE = "0020104"  # the commit issue 22 was filed on, before any feature check


@dataclass(frozen=True)
class Sizes:
    """What the parts measure on: ``make bench``'s sizes by default, ``TINY`` for the smoke
    test (``tests/bench/test_bench_parts.py``), which checks that every part still runs."""

    films: int = 4000  # corpus size (original films)
    codes: tuple[int, ...] = (10_000, 100_000, 1_000_000)  # pair-search sizes
    code_kind: str = "films"  # codes with the structure of film hashes, or "synthetic"
    fraction_queries: int = 131_072
    peers_films: int = 4000
    corpus_margins: bool = False
    margins_films: int = 200
    # The commits `cost`, `speed` and `checks_cost` compare with; None: no baseline, the
    # current code measured once (no checkout made)
    baseline: str | None = cost.ISSUE_11_BASELINE
    checks_baseline: str | None = ISSUE_22_BASELINE
    cost_rounds: int = 2  # interleaved rounds of `cost` and `speed`
    rounds: int = 3  # interleaved rounds of the checks' cost
    real_films: int = 120  # real radiographs read by the parts that need them; 0: skip them
    records: int = 1_000_000
    lists_films: tuple[int, ...] = lists_memory.FILMS  # films whose visits' lists are trained
    driver_sizes: tuple[int, ...] = driver_slope.SIZES  # whole traced builds (originals)
    scale_sizes: tuple[int, ...] = (1000, 4000, 16000)
    scale_rounds: int = 2  # builds of every size, in turn (a host's slow spell hits them all)
    executors: tuple[str, ...] = ("local", "ray")
    feature_sizes: tuple[int, ...] = (1000, 2000, 4000, 16000)  # films per cost figure
    distractor_sizes: tuple[int, ...] = (0, 4000, 16000, 64000)  # distractors the real films join
    audit_rows: tuple[int, ...] = audit_memory.ROWS
    audit_scale_rows: tuple[int, ...] = (4000, 16000)  # rows of the audited dataset
    corpus_dir: Path = CORPUS_DIR
    noop_runs: int = 5  # interleaved runs of the no-op `make splits`, one process and five
    noop_films: int = 200  # originals of the sample the no-op part builds
    drawn_patients: int = 8  # drawn patients whose revisits `visits_drawn` measures
    drawn_revisits: int = 4  # revisits drawn of each
    drawn_sample_films: int = 200  # originals of the sample whose planted visits it measures
    # The bundled samples of `margins`, `executors` and `noop` written once into corpus_dir
    # and shared (as the smoke test does), instead of into each part's scratch folder
    samples_in_corpus_dir: bool = False


TINY = Sizes(
    films=40,
    codes=(2000,),
    code_kind="synthetic",
    fraction_queries=256,
    peers_films=40,
    margins_films=40,
    baseline=None,
    checks_baseline=None,
    cost_rounds=1,
    rounds=1,
    real_films=0,
    records=2000,
    lists_films=(2000,),
    driver_sizes=(40,),
    scale_sizes=(40,),
    scale_rounds=1,
    executors=("local",),
    feature_sizes=(40,),
    audit_rows=(20, 40),
    audit_scale_rows=(40,),
    noop_runs=1,
    noop_films=40,
    drawn_patients=2,
    drawn_revisits=1,
    drawn_sample_films=30,
    samples_in_corpus_dir=True,
)
