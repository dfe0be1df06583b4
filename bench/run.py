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
from pathlib import Path

from bench import cost, lookalike_spread, margins, peers
from bench.corpus import CORPUS_DIR, corpus_source, corpus_zip
from bench.measure import child_json, python_child, run_measured
from bench.report import write_results
from bench.splits_bench import draft_build, pericurate
from bench.splits_bench import measure as measure_splits
from curation.sample import SampleTruth, truth_path

PARTS = (
    "hashing",
    "splits",
    "search",
    "audit",
    "margins",
    "planted",
    "cost",
    "speed",
    "peers",
    "executors",
    "keeper",
    "visits",
    "frames",
    "feature_cost",
    "checks_cost",
    "records_memory",
    "scale",
)
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


def _search(sizes: list[int], fraction_queries: int) -> list[dict]:
    """Issue 15, goal 5: pericurate's search (``curation.hashes.pairs``: the multi-index above its
    threshold) run whole at every size on codes with the structure of film hashes, beside
    faiss brute force (whole up to ``WHOLE_BRUTE_FORCE`` codes, where the found pairs are
    compared by digest; beyond, a fraction of its queries, extrapolated and said so)."""
    from bench.film_codes import film_codes

    film_codes(corpus_zip(4000))  # hashed once here, so no search child's memory counts it
    rows = []
    for n in sizes:
        ours = run_measured(python_child("bench.search_bench", "faiss", str(n), "0", "films"))
        queries = "0" if n <= WHOLE_BRUTE_FORCE else str(fraction_queries)
        brute = run_measured(python_child("bench.search_bench", "flat", str(n), queries, "films"))
        rows.append(
            {
                "ours": {**child_json(ours), "peak_rss_mib": ours.peak_rss_mib},
                "brute_force": {**child_json(brute), "peak_rss_mib": brute.peak_rss_mib},
            }
        )
    return rows


def _executors() -> dict:
    """Issue 15, goal 6: the bundled sample built once on each executor; wall time, peak
    memory, and whether the manifest and clusters are byte-identical."""
    from curation.sample import write_sample_archive

    with tempfile.TemporaryDirectory(prefix="pericurate-executors-") as scratch:
        archive = Path(scratch) / "sample.zip"
        write_sample_archive(archive, seed=0)
        found: dict = {}
        for name in ("local", "ray"):
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
        same = found["local"].pop("outputs") == found["ray"].pop("outputs")
    return {"sample": "write_sample_archive(seed=0)", "runs": found, "outputs_identical": same}


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


def _margins(archive: Path | None) -> dict:
    """Largest copy vs smallest distinct pair, on the test films, the 200-film sample and
    (when ``archive``) the bench corpus (about 10 minutes more)."""
    found = {
        "kit": margins.margins(margins.kit_measures()),
        "sample": margins.run(200, 0, all_copies=False),
    }
    if archive is not None:
        found["corpus"] = margins.run(0, 0, all_copies=True, archive=archive)
    return found


def _planted(archive: Path) -> dict:
    """Issue 11's planted cases against the draft corpus build of the splits part."""
    from bench.planted import planted_figures

    build = draft_build(CORPUS_DIR / "builds")
    if not (build / "manifest.parquet").is_file():
        return {"measured": False, "why": f"not measured: no corpus build in {build}"}
    truth = SampleTruth.from_json(truth_path(archive).read_text())
    return {"measured": True, "figures": planted_figures(build, truth)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__)
    parser.add_argument("--films", type=int, default=4000, help="corpus size (original films)")
    parser.add_argument("--codes", default="10000,100000,1000000", help="pair-search sizes")
    parser.add_argument("--parts", default=",".join(PARTS), help=f"any of {', '.join(PARTS)}")
    parser.add_argument(
        "--fraction-queries",
        type=int,
        default=131_072,
        help=f"queries of brute force (the search's baseline) above {WHOLE_BRUTE_FORCE:,} codes",
    )
    parser.add_argument(
        "--peers-films", type=int, default=4000, help="corpus size for the peers part"
    )
    parser.add_argument(
        "--corpus-margins", action="store_true", help="margins on the corpus too (~10 min)"
    )
    parser.add_argument("--baseline", default=cost.ISSUE_11_BASELINE, help="commit for `cost`")
    args = parser.parse_args(argv)
    parts = [p for p in args.parts.split(",") if p]
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        parser.error(f"unknown parts {unknown}; parts are {', '.join(PARTS)}")
    results: dict = {"machine": _machine()}
    results["started"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    if {"hashing", "splits", "planted", "cost"} & set(parts) or args.corpus_margins:
        archive = corpus_zip(args.films)
        root = corpus_source(archive).root
        results["corpus"] = {"films": args.films, "archive": archive.name}
    if "hashing" in parts:
        run = run_measured(python_child("bench.hashing_bench", str(root)))
        results["hashing"] = {**child_json(run), "peak_rss_mib": run.peak_rss_mib}
    if "splits" in parts:
        results["splits"] = measure_splits(sys.executable, archive, CORPUS_DIR / "builds")
    if "search" in parts:
        sizes = [int(n) for n in args.codes.split(",") if n]
        results["search"] = _search(sizes, args.fraction_queries)
    if "audit" in parts:
        results["audit"] = _audit(CORPUS_DIR / "builds")
    if "margins" in parts:
        results["margins"] = _margins(archive if args.corpus_margins else None)
    if "planted" in parts:
        results["planted"] = _planted(archive)
    if "cost" in parts:
        results["cost"] = cost.measure(archive, args.baseline)
    if "speed" in parts:  # issue 15, goals 2-4: the corpus in the archive's own layout
        in_folders = corpus_zip(args.films, all_copies_among_originals=False)
        results["speed"] = cost.measure(in_folders, args.baseline, audit=True)
    if "peers" in parts:
        results["peers"] = peers.measure(corpus_zip(args.peers_films))
        results["lookalike_spread"] = lookalike_spread.measure(corpus_zip(args.peers_films))
    if "executors" in parts:
        results["executors"] = _executors()
    if "keeper" in parts:  # issue 22: which film of a group is kept, on real films
        from bench import keeper

        results["keeper"] = keeper.figures()
    if "visits" in parts:  # visits of one patient: realistic revisits of the real films
        from bench import visits

        results["visits"] = visits.run()
    if "frames" in parts:  # issue 22: same picture under another frame, on real films
        from bench import frames

        results["frames"] = frames.measure()
        if not results["frames"]["measured"]:
            print(f"frames: {results['frames']['why']}")
    if "feature_cost" in parts:  # issue 22: the shortlist's gate on real films, cost per film
        from bench import feature_cost

        in_folders = corpus_zip(args.films, all_copies_among_originals=False)
        folder = peers.originals_folder(corpus_source(in_folders).root)
        results["feature_cost"] = {
            "gate": feature_cost.gate(120, 12, 2),
            "scale": feature_cost.scale(folder, 2),
            "matching": feature_cost.matching(120),
        }
    if "checks_cost" in parts:  # issue 22: the build and audit against the round's start
        from bench import near_identical_cost

        archive = corpus_zip(4000, all_copies_among_originals=False)
        against = cost.measure(archive, ISSUE_22_BASELINE, rounds=3, audit=True)
        results["checks_cost"] = {
            **against,
            "near_identical": near_identical_cost.measure(
                archive.parent / f"{archive.stem}-cost" / "current"
            ),
        }
    if "records_memory" in parts:  # issue 25: driver memory per source file, 1M records
        run = run_measured(python_child("bench.records_memory", "--files", "1000000"))
        results["records_memory"] = {**child_json(run), "peak_rss_mib": run.peak_rss_mib}
    if "scale" in parts:  # issue 25: cold builds at 1k, 4k, 16k originals, local and two nodes
        from bench import scale

        with tempfile.TemporaryDirectory(prefix="pericurate-scale-", dir="/tmp") as scratch:
            results["scale"] = scale.measure([1000, 4000, 16000], Path(scratch))
    results["machine"]["load_average_at_end"] = os.getloadavg()
    results_path = BENCH_DIR / "results.json"
    earlier = json.loads(results_path.read_text()) if results_path.exists() else {}
    write_results({**earlier, **results}, results_path, BENCH_DIR / "RESULTS.md")


if __name__ == "__main__":
    main()
