"""``python -m bench.run``: build the corpus, run the measurements, write the results.

Every figure is measured in this run, next to its baseline; a figure that was extrapolated
says so in its row. ``--parts`` and ``--codes`` select what to run, so one part can be rerun
alone; the results of parts not run are kept from the previous ``bench/results.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from bench import parts
from bench.common.corpus import corpus_source, corpus_zip
from bench.common.measure import child_json, python_child, run_measured
from bench.common.splits_bench import build_draft, draft_build
from bench.common.splits_bench import measure as measure_splits
from bench.parts import WHOLE_BRUTE_FORCE
from bench.peers import compare as peers
from bench.peers import lookalike_spread
from bench.report.write import write_results
from bench.scale import audit_memory, cost, driver_slope, lists_memory, records_memory
from bench.sizes import Sizes

BENCH_DIR = Path(__file__).parent


def _machine() -> dict:
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    memory_kib = int(Path("/proc/meminfo").read_text().split()[1])
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "memory_gib": round(memory_kib / 2**20, 1),
        "python": platform.python_version(),
        "load_average_at_start": os.getloadavg(),
    }


def skipped(why: str) -> dict:
    """A part's record when it could not measure: the run says so instead of a figure."""
    return {"measured": False, "why": f"skipped: {why}"}


def sample(s: Sizes, films: int) -> Path | None:
    """The bundled sample of ``films`` originals (seed 0, copies in their folders), written
    once into the corpus folder when the sizes say so; else None (each part writes its own)."""
    if not s.samples_in_corpus_dir:
        return None
    return corpus_zip(films, seed=0, folder=s.corpus_dir, all_copies_among_originals=False)


def _real_films_off(s: Sizes, part: str) -> dict | None:
    return None if s.real_films else skipped(f"{part} reads real films, and that is off")


def _hashing(s: Sizes) -> dict:
    root = corpus_source(corpus_zip(s.films, folder=s.corpus_dir)).root
    run = run_measured(python_child("bench.scale.hashing", str(root)))
    return {"hashing": {**child_json(run), "peak_rss_mib": run.peak_rss_mib}}


def _splits(s: Sizes) -> dict:
    archive = corpus_zip(s.films, folder=s.corpus_dir)
    return {"splits": measure_splits(sys.executable, archive, s.corpus_dir / "builds")}


def _search_part(s: Sizes) -> dict:
    return {"search": parts.search(list(s.codes), s.fraction_queries, s.code_kind)}


def _corpus_builds(s: Sizes) -> Path:
    """The folder of the corpus's builds, with the draft build ``audit`` and ``planted`` read:
    made here (the draft alone, as ``splits`` makes it) when no earlier part or run made it."""
    builds = s.corpus_dir / "builds"
    if not (draft_build(builds) / "manifest.parquet").is_file():
        build_draft(sys.executable, corpus_zip(s.films, folder=s.corpus_dir), builds)
    return builds


def _audit_part(s: Sizes) -> dict:
    return {"audit": parts.audit(_corpus_builds(s))}


def _margins_part(s: Sizes) -> dict:
    archive = corpus_zip(s.films, folder=s.corpus_dir) if s.corpus_margins else None
    return {"margins": parts.margins_found(archive, s.margins_films, sample(s, s.margins_films))}


def _planted_part(s: Sizes) -> dict:
    builds = _corpus_builds(s)
    return {"planted": parts.planted(corpus_zip(s.films, folder=s.corpus_dir), builds)}


def _cost(s: Sizes) -> dict:
    archive = corpus_zip(s.films, folder=s.corpus_dir)
    return {"cost": cost.measure(archive, s.baseline, s.cost_rounds)}


def _speed(s: Sizes) -> dict:
    """The corpus in the archive's own layout, build and audit against the baseline."""
    in_folders = corpus_zip(s.films, folder=s.corpus_dir, all_copies_among_originals=False)
    return {"speed": cost.measure(in_folders, s.baseline, s.cost_rounds, audit=True)}


PEERS_MISSING = "the peers are not installed (uv sync --frozen --project bench/peers/env)"


def _peers(s: Sizes) -> dict:
    if not peers.peer_python().exists():
        return {"peers": skipped(PEERS_MISSING), "lookalike_spread": skipped(PEERS_MISSING)}
    archive = corpus_zip(s.peers_films, folder=s.corpus_dir)
    return {
        "peers": peers.measure(archive, s.corpus_dir / "peers"),
        "lookalike_spread": lookalike_spread.measure(archive),
    }


def _peers_real(s: Sizes) -> dict:
    """pericurate and its peers by CPU on one folder of real films with altered copies."""
    from bench.peers import real as peers_real

    if not peers.peer_python().exists():
        return {"peers_real": skipped(PEERS_MISSING)}
    off = _real_films_off(s, "peers_real")
    return {"peers_real": off or peers_real.measure(films=s.real_films + 25)}


def _executors_part(s: Sizes) -> dict:
    return {"executors": parts.executors(s.films, s.executors, sample(s, s.films))}


def _keeper(s: Sizes) -> dict:
    """Which film of a group is kept, on real films."""
    from bench.keeper import altered as keeper

    return {"keeper": _real_films_off(s, "keeper") or keeper.figures(s.real_films)}


def _keeper_real(s: Sizes) -> dict:
    """Which film is kept when real originals carry a border of their own."""
    from bench.keeper import bordered as keeper_real

    return {"keeper_real": _real_films_off(s, "keeper_real") or keeper_real.figures(s.real_films)}


def _visits(s: Sizes) -> dict:
    """Visits of one patient verified by features, on every real film (every pair of the
    development set is the measurement)."""
    from bench.visits import real as visits

    return {"visits": _real_films_off(s, "visits") or visits.run()}


def _visits_drawn(s: Sizes) -> dict:
    """The sample's drawn revisits and distinct drawn films, verified as real ones are."""
    from bench.visits import drawn

    return {"visits_drawn": drawn.measure(s.drawn_patients, s.drawn_revisits, s.drawn_sample_films)}


def _frames(s: Sizes) -> dict:
    """The same picture under another frame, on real films."""
    from bench.same_picture import frames

    found = _real_films_off(s, "frames") or frames.measure(s.real_films)
    if not found["measured"]:
        print(f"frames: {found['why']}")
    return {"frames": found}


def _crop_gate(s: Sizes) -> dict:
    """Crops to 50-60 % of each side against every distinct pair, on real films."""
    from bench.same_picture import crop_gate

    off = _real_films_off(s, "crop_gate")
    return {"crop_gate": off or crop_gate.measure(s.real_films, s.real_films, 25)}


def _feature_cost(s: Sizes) -> dict:
    """The shortlist's gate on real films, and its cost per film on the corpus."""
    from bench.same_picture import feature_cost

    in_folders = corpus_zip(s.films, folder=s.corpus_dir, all_copies_among_originals=False)
    folder = peers.originals_folder(corpus_source(in_folders).root)
    off = _real_films_off(s, "feature_cost's gate and matching")
    return {
        "feature_cost": {
            "gate": off or feature_cost.gate(s.real_films, 12, 2),
            "scale": feature_cost.scale(folder, 2, s.feature_sizes),
            "matching": off or feature_cost.matching(s.real_films),
        }
    }


def _distractors(s: Sizes) -> dict:
    """The shortlist's recall of real copies among thousands of distractor films."""
    from bench.scale import distractors

    off = _real_films_off(s, "distractors")
    return {"distractors": off or distractors.run(list(s.distractor_sizes), s.real_films)}


def _visit_distractors(s: Sizes) -> dict:
    """The visits' retrieval of real revisits among thousands of distractor films."""
    from bench.visits import distractors as visit_distractors

    off = _real_films_off(s, "visit_distractors")
    return {"visit_distractors": off or visit_distractors.run(list(s.distractor_sizes))}


def _shortlist_nodes(s: Sizes) -> dict:
    """The shortlist's search among distractors in process, in local workers, on two nodes."""
    from bench.scale import shortlist_nodes

    off = _real_films_off(s, "shortlist_nodes")
    sizes = [size for size in s.distractor_sizes if size] or [0]
    found = off or shortlist_nodes.measure(sizes, 2, s.real_films, 2, "ray" in s.executors)
    return {"shortlist_nodes": found}


def _checks_cost(s: Sizes) -> dict:
    """The build and audit against the start of the feature checks."""
    from bench.same_picture import step_cost as near_identical_cost

    archive = corpus_zip(s.films, folder=s.corpus_dir, all_copies_among_originals=False)
    against = cost.measure(archive, s.checks_baseline, rounds=s.rounds, audit=True)
    built = archive.parent / f"{archive.stem}-cost" / "current"
    with tempfile.TemporaryDirectory(prefix="frame-cost-", dir="/tmp") as scratch:
        frames = _real_films_off(s, "checks_cost's frame check") or (
            near_identical_cost.measure_frames(Path(scratch), films=4, archive=3, workers=2)
        )
    near_identical = {**near_identical_cost.measure(built), "frame_check": frames}
    return {"checks_cost": {**against, "near_identical": near_identical}}


def _scale(s: Sizes) -> dict:
    """Cold builds at each size, locally and on two nodes."""
    from bench.scale import curve as scale

    with tempfile.TemporaryDirectory(prefix="pericurate-scale-", dir="/tmp") as scratch:
        sizes = list(s.scale_sizes)
        found = scale.measure(sizes, Path(scratch), s.executors, s.corpus_dir, s.scale_rounds)
    return {"scale": found}


def _audit_memory(s: Sizes) -> dict:
    """The audit's peak memory against the size of a group of identical films."""
    return {"audit_memory": audit_memory.measure(s.audit_rows)}


def _audit_scale(s: Sizes) -> dict:
    """The audit of a published dataset at each size, locally and on two nodes."""
    return {"audit_scale": parts.audit_at_scale(s.audit_scale_rows, s.executors)}


# Each part: what it measures at the sizes given, as the results' entries it writes.
def _noop(s: Sizes) -> dict:
    """``make splits`` with nothing to do: one process against the five commands it replaced."""
    from bench.scale import noop as noop_bench

    found = noop_bench.measure(s.noop_runs, films=s.noop_films, sample=sample(s, s.noop_films))
    return {"noop": found}


PARTS: dict[str, Callable[[Sizes], dict]] = {
    "hashing": _hashing,
    "splits": _splits,
    "search": _search_part,
    "audit": _audit_part,
    "margins": _margins_part,
    "planted": _planted_part,
    "cost": _cost,
    "speed": _speed,
    "peers": _peers,
    "peers_real": _peers_real,
    "executors": _executors_part,
    "keeper": _keeper,
    "keeper_real": _keeper_real,
    "visits": _visits,
    "visits_drawn": _visits_drawn,
    "frames": _frames,
    "crop_gate": _crop_gate,
    "feature_cost": _feature_cost,
    "distractors": _distractors,
    "visit_distractors": _visit_distractors,
    "shortlist_nodes": _shortlist_nodes,
    "checks_cost": _checks_cost,
    "records_memory": lambda s: records_memory.part(s.records),
    "lists_memory": lambda s: lists_memory.part(s.lists_films),
    "driver_memory": lambda s: driver_slope.part(s.driver_sizes, s.corpus_dir),
    "scale": _scale,
    "audit_memory": _audit_memory,
    "audit_scale": _audit_scale,
    "noop": _noop,
}
# Parts that may record a plain skip, and what they need that a machine may lack.
MAY_SKIP = {
    "keeper": "real films",
    "keeper_real": "real films",
    "visits": "real films",
    "frames": "real films",
    "crop_gate": "real films",
    "distractors": "real films",
    "visit_distractors": "real films",
    "shortlist_nodes": "real films",
    "peers": "the peers (fastdup, imagededup, cleanvision)",
    "peers_real": "the peers and real films",
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__)
    default = Sizes()
    parser.add_argument("--films", type=int, default=default.films, help="corpus size")
    parser.add_argument(
        "--codes", default=",".join(map(str, default.codes)), help="pair-search sizes"
    )
    parser.add_argument("--parts", default=",".join(PARTS), help=f"any of {', '.join(PARTS)}")
    parser.add_argument(
        "--fraction-queries",
        type=int,
        default=default.fraction_queries,
        help=f"brute force's queries (the search's baseline) above {WHOLE_BRUTE_FORCE:,} codes",
    )
    parser.add_argument(
        "--peers-films", type=int, default=default.peers_films, help="corpus size for peers"
    )
    parser.add_argument(
        "--corpus-margins", action="store_true", help="margins on the corpus too (~10 min)"
    )
    parser.add_argument("--baseline", default=default.baseline, help="commit for `cost`")
    args = parser.parse_args(argv)
    chosen = [p for p in args.parts.split(",") if p]
    unknown = sorted(set(chosen) - set(PARTS))
    if unknown:
        parser.error(f"unknown parts {unknown}; parts are {', '.join(PARTS)}")
    sizes = replace(
        default,
        films=args.films,
        codes=tuple(int(n) for n in args.codes.split(",") if n),
        fraction_queries=args.fraction_queries,
        peers_films=args.peers_films,
        corpus_margins=args.corpus_margins,
        baseline=args.baseline,
    )
    results: dict = {"machine": _machine()}
    results["started"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    if {"hashing", "splits", "planted", "cost"} & set(chosen) or args.corpus_margins:
        archive = corpus_zip(sizes.films, folder=sizes.corpus_dir)
        results["corpus"] = {"films": args.films, "archive": archive.name}
    for part in chosen:
        results.update(PARTS[part](sizes))
    results["machine"]["load_average_at_end"] = os.getloadavg()
    results_path = BENCH_DIR / "results.json"
    earlier = json.loads(results_path.read_text()) if results_path.exists() else {}
    write_results({**earlier, **results}, results_path, BENCH_DIR / "RESULTS.md")


if __name__ == "__main__":
    main()
