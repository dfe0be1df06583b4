"""``python -m bench.run``: build the corpus, run the measurements, write the results.

Every figure is measured in this run, next to its baseline; a figure that was extrapolated
says so in its row. ``--parts`` and ``--codes`` select what to run, so one part can be rerun
alone; the results of parts not run are kept from the previous ``bench/results.json``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from bench import audit_memory, cost, lookalike_spread, margins, peers
from bench.corpus import CORPUS_DIR, corpus_source, corpus_zip
from bench.measure import child_json, python_child, run_measured
from bench.report import write_results
from bench.splits_bench import draft_build, pericurate
from bench.splits_bench import measure as measure_splits
from curation.sample import SampleTruth, truth_path

BENCH_DIR = Path(__file__).parent
ISSUE_22_BASELINE = "0020104"  # the commit issue 22 was filed on, before any feature check
WHOLE_BRUTE_FORCE = 100_000  # brute force (the baseline) runs whole up to here, else a fraction


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


def _search(sizes: list[int], fraction_queries: int, kind: str) -> list[dict]:
    """Issue 15, goal 5: pericurate's search (``curation.hashes.pairs``: the multi-index above its
    threshold) run whole at every size on codes with the structure of film hashes, beside
    faiss brute force (whole up to ``WHOLE_BRUTE_FORCE`` codes, where the found pairs are
    compared by digest; beyond, a fraction of its queries, extrapolated and said so)."""
    from bench.film_codes import film_codes

    if kind == "films":  # hashed once here, so no search child's memory counts it
        film_codes(corpus_zip(4000))
    rows = []
    for n in sizes:
        ours = run_measured(python_child("bench.search_bench", "faiss", str(n), "0", kind))
        queries = "0" if n <= WHOLE_BRUTE_FORCE else str(fraction_queries)
        brute = run_measured(python_child("bench.search_bench", "flat", str(n), queries, kind))
        rows.append(
            {
                "ours": {**child_json(ours), "peak_rss_mib": ours.peak_rss_mib},
                "brute_force": {**child_json(brute), "peak_rss_mib": brute.peak_rss_mib},
            }
        )
    return rows


def _executors(films: int, executors: tuple[str, ...]) -> dict:
    """Issue 15, goal 6: the bundled sample built once on each executor; wall time, peak
    memory, and whether the manifest and clusters are byte-identical."""
    from curation.sample import write_sample_archive

    with tempfile.TemporaryDirectory(prefix="pericurate-executors-") as scratch:
        archive = Path(scratch) / "sample.zip"
        write_sample_archive(archive, seed=0, films=films)
        found: dict = {}
        for name in executors:
            build = Path(scratch) / name
            run_measured(
                pericurate(
                    sys.executable,
                    "download",
                    str(archive),
                    "--build",
                    str(build),
                    "--lock",
                    str(build / "source.lock.json"),
                )
            )
            built = run_measured(
                pericurate(
                    sys.executable,
                    "build",
                    "--build",
                    str(build),
                    "--no-fail-on-rejected",
                    "--executor",
                    name,
                )
            )
            outputs = [(build / f).read_bytes() for f in ("manifest.parquet", "clusters.parquet")]
            found[name] = {
                "wall_s": built.wall_s,
                "peak_rss_mib": built.peak_rss_mib,
                "step_times": json.loads((build / "work" / "times.json").read_text()),
                "outputs": outputs,
            }
        outputs = [found[name].pop("outputs") for name in executors]
    same = all(o == outputs[0] for o in outputs)
    sample = f"write_sample_archive(seed=0, films={films})"
    return {"sample": sample, "runs": found, "outputs_identical": same}


def _audit(folder: Path) -> dict:
    """``pericurate audit`` on the draft corpus build (exit 1 means it found leakage)."""
    if importlib.util.find_spec("curation.audit.audit") is None:
        return {
            "measured": False,
            "why": "not measured: audit not available (curation.audit.audit)",
        }
    build = draft_build(folder)
    if not (build / "dataset").is_dir():
        return {"measured": False, "why": f"not measured: no corpus build in {build}"}
    command = pericurate(sys.executable, "audit", str(build), "--out", str(folder / "audit"))
    run = run_measured(command, ok_codes=(0, 1))
    return {
        "measured": True,
        "wall_s": run.wall_s,
        "peak_rss_mib": run.peak_rss_mib,
        "leakage_found": run.exit_code == 1,
    }


def _margins(archive: Path | None, films: int) -> dict:
    """Largest copy vs smallest distinct pair, on the test films, the 200-film sample and
    (when ``archive``) the bench corpus (about 10 minutes more)."""
    found = {
        "kit": margins.margins(margins.kit_measures()),
        "sample": margins.run(films, 0, all_copies=False),
    }
    if archive is not None:
        found["corpus"] = margins.run(0, 0, all_copies=True, archive=archive)
    return found


def _planted(archive: Path, builds: Path) -> dict:
    """Issue 11's planted cases against the draft corpus build of the splits part."""
    from bench.planted import planted_figures

    build = draft_build(builds)
    if not (build / "manifest.parquet").is_file():
        return {"measured": False, "why": f"not measured: no corpus build in {build}"}
    truth = SampleTruth.from_json(truth_path(archive).read_text())
    return {"measured": True, "figures": planted_figures(build, truth)}


@dataclass(frozen=True)
class Sizes:
    """What the parts measure on: ``make bench``'s sizes by default, ``TINY`` for the smoke
    test (``tests/test_bench_parts.py``), which checks that every part still runs."""

    films: int = 4000  # corpus size (original films)
    codes: tuple[int, ...] = (10_000, 100_000, 1_000_000)  # pair-search sizes
    code_kind: str = "films"  # codes with the structure of film hashes, or "synthetic"
    fraction_queries: int = 131_072
    peers_films: int = 4000
    corpus_margins: bool = False
    margins_films: int = 200
    baseline: str = cost.ISSUE_11_BASELINE
    checks_baseline: str = ISSUE_22_BASELINE
    cost_rounds: int = 2  # interleaved rounds of `cost` and `speed`
    rounds: int = 3  # interleaved rounds of the checks' cost
    real_films: int = 120  # real radiographs read by the parts that need them; 0: skip them
    records: int = 1_000_000
    scale_sizes: tuple[int, ...] = (1000, 4000, 16000)
    executors: tuple[str, ...] = ("local", "ray")
    feature_sizes: tuple[int, ...] = (1000, 2000, 4000, 16000)  # films per cost figure
    audit_rows: tuple[int, ...] = audit_memory.ROWS
    corpus_dir: Path = CORPUS_DIR
    noop_runs: int = 5  # interleaved runs of the no-op `make splits`, one process and five


TINY = Sizes(
    films=40,
    codes=(2000,),
    code_kind="synthetic",
    fraction_queries=256,
    peers_films=40,
    margins_films=40,
    baseline="HEAD",
    checks_baseline="HEAD",
    cost_rounds=1,
    rounds=1,
    real_films=0,
    records=2000,
    scale_sizes=(40,),
    executors=("local",),
    feature_sizes=(40,),
    audit_rows=(20, 40),
    noop_runs=1,
)


def skipped(why: str) -> dict:
    """A part's record when it could not measure: the run says so instead of a figure."""
    return {"measured": False, "why": f"skipped: {why}"}


def _real_films_off(s: Sizes, part: str) -> dict | None:
    return None if s.real_films else skipped(f"{part} reads real films, and that is off")


def _hashing(s: Sizes) -> dict:
    root = corpus_source(corpus_zip(s.films, folder=s.corpus_dir)).root
    run = run_measured(python_child("bench.hashing_bench", str(root)))
    return {"hashing": {**child_json(run), "peak_rss_mib": run.peak_rss_mib}}


def _splits(s: Sizes) -> dict:
    archive = corpus_zip(s.films, folder=s.corpus_dir)
    return {"splits": measure_splits(sys.executable, archive, s.corpus_dir / "builds")}


def _search_part(s: Sizes) -> dict:
    return {"search": _search(list(s.codes), s.fraction_queries, s.code_kind)}


def _corpus_builds(s: Sizes) -> Path:
    """The folder of the corpus's builds, with the draft build ``audit`` and ``planted`` read:
    made here (as by ``splits``) when no earlier part or run made it."""
    builds = s.corpus_dir / "builds"
    if not (draft_build(builds) / "manifest.parquet").is_file():
        measure_splits(sys.executable, corpus_zip(s.films, folder=s.corpus_dir), builds)
    return builds


def _audit_part(s: Sizes) -> dict:
    return {"audit": _audit(_corpus_builds(s))}


def _margins_part(s: Sizes) -> dict:
    archive = corpus_zip(s.films, folder=s.corpus_dir) if s.corpus_margins else None
    return {"margins": _margins(archive, s.margins_films)}


def _planted_part(s: Sizes) -> dict:
    builds = _corpus_builds(s)
    return {"planted": _planted(corpus_zip(s.films, folder=s.corpus_dir), builds)}


def _cost(s: Sizes) -> dict:
    archive = corpus_zip(s.films, folder=s.corpus_dir)
    return {"cost": cost.measure(archive, s.baseline, s.cost_rounds)}


def _speed(s: Sizes) -> dict:
    """The corpus in the archive's own layout, build and audit against the baseline."""
    in_folders = corpus_zip(s.films, folder=s.corpus_dir, all_copies_among_originals=False)
    return {"speed": cost.measure(in_folders, s.baseline, s.cost_rounds, audit=True)}


def _peers(s: Sizes) -> dict:
    missing = [m for m in ("imagededup", "cleanvision") if importlib.util.find_spec(m) is None]
    if missing:
        why = f"the peers {', '.join(missing)} are not installed (uv sync --group bench)"
        return {"peers": skipped(why), "lookalike_spread": skipped(why)}
    archive = corpus_zip(s.peers_films, folder=s.corpus_dir)
    return {
        "peers": peers.measure(archive, s.corpus_dir / "peers"),
        "lookalike_spread": lookalike_spread.measure(archive),
    }


def _executors_part(s: Sizes) -> dict:
    return {"executors": _executors(s.films, s.executors)}


def _keeper(s: Sizes) -> dict:
    """Which film of a group is kept, on real films."""
    from bench import keeper

    return {"keeper": _real_films_off(s, "keeper") or keeper.figures(s.real_films)}


def _keeper_real(s: Sizes) -> dict:
    """Which film is kept when real originals carry a border of their own."""
    from bench import keeper_real

    return {"keeper_real": _real_films_off(s, "keeper_real") or keeper_real.figures(s.real_films)}


def _visits(s: Sizes) -> dict:
    """Visits of one patient verified by features, on real films."""
    from bench import visits

    return {"visits": _real_films_off(s, "visits") or visits.run(s.real_films)}


def _frames(s: Sizes) -> dict:
    """The same picture under another frame, on real films."""
    from bench import frames

    found = _real_films_off(s, "frames") or frames.measure(s.real_films)
    if not found["measured"]:
        print(f"frames: {found['why']}")
    return {"frames": found}


def _feature_cost(s: Sizes) -> dict:
    """The shortlist's gate on real films, and its cost per film on the corpus."""
    from bench import feature_cost

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


def _checks_cost(s: Sizes) -> dict:
    """The build and audit against the start of the feature checks."""
    from bench import near_identical_cost

    archive = corpus_zip(s.films, folder=s.corpus_dir, all_copies_among_originals=False)
    against = cost.measure(archive, s.checks_baseline, rounds=s.rounds, audit=True)
    built = archive.parent / f"{archive.stem}-cost" / "current"
    return {"checks_cost": {**against, "near_identical": near_identical_cost.measure(built)}}


def _records_memory(s: Sizes) -> dict:
    """Driver memory per source file."""
    run = run_measured(python_child("bench.records_memory", "--files", str(s.records)))
    return {"records_memory": {**child_json(run), "peak_rss_mib": run.peak_rss_mib}}


def _scale(s: Sizes) -> dict:
    """Cold builds at each size, locally and on two nodes."""
    from bench import scale

    with tempfile.TemporaryDirectory(prefix="pericurate-scale-", dir="/tmp") as scratch:
        found = scale.measure(list(s.scale_sizes), Path(scratch), s.executors, s.corpus_dir)
    return {"scale": found}


def _audit_memory(s: Sizes) -> dict:
    """The audit's peak memory against the size of a group of identical films."""
    return {"audit_memory": audit_memory.measure(s.audit_rows)}


# Each part: what it measures at the sizes given, as the results' entries it writes.
def _noop(s: Sizes) -> dict:
    """``make splits`` with nothing to do: one process against the five commands it replaced."""
    from bench import noop_bench

    return {"noop": noop_bench.measure(s.noop_runs)}


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
    "executors": _executors_part,
    "keeper": _keeper,
    "keeper_real": _keeper_real,
    "visits": _visits,
    "frames": _frames,
    "feature_cost": _feature_cost,
    "checks_cost": _checks_cost,
    "records_memory": _records_memory,
    "scale": _scale,
    "audit_memory": _audit_memory,
    "noop": _noop,
}
# Parts that may record a plain skip, and what they need that a machine may lack.
MAY_SKIP = {
    "keeper": "real films",
    "keeper_real": "real films",
    "visits": "real films",
    "frames": "real films",
    "peers": "the peers (imagededup, cleanvision)",
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
        help=f"queries of brute force (the search's baseline) above {WHOLE_BRUTE_FORCE:,} codes",
    )
    parser.add_argument(
        "--peers-films", type=int, default=default.peers_films, help="corpus size for peers"
    )
    parser.add_argument(
        "--corpus-margins", action="store_true", help="margins on the corpus too (~10 min)"
    )
    parser.add_argument("--baseline", default=default.baseline, help="commit for `cost`")
    args = parser.parse_args(argv)
    parts = [p for p in args.parts.split(",") if p]
    unknown = sorted(set(parts) - set(PARTS))
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
    if {"hashing", "splits", "planted", "cost"} & set(parts) or args.corpus_margins:
        archive = corpus_zip(sizes.films, folder=sizes.corpus_dir)
        results["corpus"] = {"films": args.films, "archive": archive.name}
    for part in parts:
        results.update(PARTS[part](sizes))
    results["machine"]["load_average_at_end"] = os.getloadavg()
    results_path = BENCH_DIR / "results.json"
    earlier = json.loads(results_path.read_text()) if results_path.exists() else {}
    write_results({**earlier, **results}, results_path, BENCH_DIR / "RESULTS.md")


if __name__ == "__main__":
    main()
