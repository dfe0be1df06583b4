"""Every planted case of a sample against a build's decisions (issue 11's done-when list).

    uv run python -m bench.planted BUILD_DIR SAMPLE.truth.json

Figures describe the synthetic sample only.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pyarrow.parquet as pq

from curation.sample import SampleTruth


def planted_figures(build: Path, truth: SampleTruth) -> dict[str, int]:
    """Counts of each planted case and of the chain's mistakes on it."""
    rows = pq.read_table(build / "manifest.parquet").to_pylist()
    images = {r["film_id"]: r for r in rows if r["kind"] == "image"}
    kept = {f for f, r in images.items() if r["fate"] == "kept"}
    dropped = {f for f, r in images.items() if r["fate"] == "dropped"}
    copies = {c.stem for c in truth.augmented + truth.augmented_among_originals}
    twin = {}
    for pair in truth.double_annotated:
        twin[pair.first], twin[pair.second] = pair.second, pair.first
    agreement = {
        frozenset((r["film_id"], r["other_film_id"]))
        for r in pq.read_table(build / "agreement.parquet").to_pylist()
    }
    split = {
        r["film_id"]: r["split"] for r in pq.read_table(build / "clusters.parquet").to_pylist()
    }
    summary = json.loads((build / "curation.json").read_text())["counts"]
    return {
        "copies planted (folder and among originals)": len(copies),
        "copies kept": len(kept & copies),
        "copy groups without their original kept": sum(
            1 for c in truth.augmented_among_originals if not {c.source, twin.get(c.source)} & kept
        ),
        "re-filings planted": len(truth.double_annotated),
        "re-filings not kept once or missing from agreement": sum(
            1
            for d in truth.double_annotated
            if len({d.first, d.second} & kept) != 1
            or frozenset((d.first, d.second)) not in agreement
        ),
        "copies read as re-filings": sum(1 for pair in agreement if pair & copies),
        "distinct films dropped": len(dropped - copies - set(twin)),
        "look-alike visit groups": len(truth.lookalike_groups),
        "look-alike visit groups in one split": sum(
            len({split[f] for f in group if f in split}) <= 1 for group in truth.lookalike_groups
        ),
        "largest cluster (films)": summary["largest_clusters"][0]["films"],
    }


def main() -> None:
    build, truth = Path(sys.argv[1]), Path(sys.argv[2])
    for name, value in planted_figures(build, SampleTruth.from_json(truth.read_text())).items():
        print(f"| {name} | {value} |")


if __name__ == "__main__":
    main()
