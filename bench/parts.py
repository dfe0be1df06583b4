"""The bench parts' measurements that need more than a line of ``bench.run``: the pair
search, the executors, the audit, the margins and the planted cases."""

from __future__ import annotations

import importlib.util
import json
import sys
import tempfile
from pathlib import Path

from bench.common.corpus import corpus_zip
from bench.common.measure import child_json, python_child, run_measured
from bench.common.splits_bench import draft_build, pericurate
from bench.margins import same_picture as margins
from curation.sample import SampleTruth, truth_path

WHOLE_BRUTE_FORCE = 100_000  # brute force (the baseline) runs whole up to here, else a fraction


def search(sizes: list[int], fraction_queries: int, kind: str) -> list[dict]:
    """Issue 15, goal 5: pericurate's search (``curation.hashes.pairs``: the multi-index above its
    threshold) run whole at every size on codes with the structure of film hashes, beside
    faiss brute force (whole up to ``WHOLE_BRUTE_FORCE`` codes, where the found pairs are
    compared by digest; beyond, a fraction of its queries, extrapolated and said so)."""
    from bench.search.film_codes import film_codes

    if kind == "films":  # hashed once here, so no search child's memory counts it
        film_codes(corpus_zip(4000))
    rows = []
    for n in sizes:
        ours = run_measured(python_child("bench.search.engine", "faiss", str(n), "0", kind))
        queries = "0" if n <= WHOLE_BRUTE_FORCE else str(fraction_queries)
        brute = run_measured(python_child("bench.search.engine", "flat", str(n), queries, kind))
        rows.append(
            {
                "ours": {**child_json(ours), "peak_rss_mib": ours.peak_rss_mib},
                "brute_force": {**child_json(brute), "peak_rss_mib": brute.peak_rss_mib},
            }
        )
    return rows


def executors(films: int, executors: tuple[str, ...], sample: Path | None = None) -> dict:
    """Issue 15, goal 6: the bundled sample (``sample`` when already written) built once on
    each executor; wall time, peak memory, and whether the manifest and clusters are
    byte-identical."""
    from curation.sample import write_sample_archive

    with tempfile.TemporaryDirectory(prefix="pericurate-executors-") as scratch:
        archive = sample or Path(scratch) / "sample.zip"
        if sample is None:
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


def audit(folder: Path) -> dict:
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


def audit_at_scale(rows: tuple[int, ...], executors: tuple[str, ...]) -> dict:
    """Issue 39: the audit of a synthetic published dataset of each size, locally and on the
    two-node cluster (``bench.scale.audit_cluster``): wall, CPU, the driver's and each
    node's peak memory, the reports compared, the planted pairs found."""
    from bench.scale import audit_cluster

    with tempfile.TemporaryDirectory(prefix="pericurate-audit-cluster-", dir="/tmp") as scratch:
        return audit_cluster.measure(rows, Path(scratch), executors)


def margins_found(archive: Path | None, films: int, sample: Path | None = None) -> dict:
    """Largest copy vs smallest distinct pair, on the test films, the 200-film sample
    (``sample`` when already written) and (when ``archive``) the bench corpus (about 10
    minutes more)."""
    found = {
        "kit": margins.margins(margins.kit_measures()),
        "sample": margins.run(films, 0, all_copies=False, archive=sample),
    }
    if archive is not None:
        found["corpus"] = margins.run(0, 0, all_copies=True, archive=archive)
    return found


def planted(archive: Path, builds: Path) -> dict:
    """Issue 11's planted cases against the draft corpus build of the splits part."""
    from bench.planted import planted_figures

    build = draft_build(builds)
    if not (build / "manifest.parquet").is_file():
        return {"measured": False, "why": f"not measured: no corpus build in {build}"}
    truth = SampleTruth.from_json(truth_path(archive).read_text())
    return {"measured": True, "figures": planted_figures(build, truth)}
