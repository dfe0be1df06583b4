"""The audit's peak memory against the size of a group of identical films.

Real datasets hold thousands of copies of one blank or test image. The target written here
holds ``rows`` copies of one film, half in train and half in test, beside a few distinct
films in each split; ``pericurate audit`` of it runs in a child whose peak resident memory
(the largest single process, ``bench.common.measure``) is the figure. The goal: 2,000 rows at most
1.2 times the peak at 1,000, and 20,000 rows within 2 GiB.

``python -m bench.scale.audit_memory --rows 1000,2000,20000`` prints the figures as JSON.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image

from bench.common.measure import run_measured
from bench.common.splits_bench import pericurate

ROWS = (1000, 2000, 20000)
DISTINCT = 4  # distinct films per split beside the copies
SIZE = (512, 256)
GOAL_RATIO = 1.2  # peak at twice the rows over the peak at the rows
GOAL_MIB = 2048


def _film(seed: int) -> bytes:
    """A smooth grey picture with grain, as a JPEG: features and hashes like a film's."""
    rng = np.random.default_rng(seed)
    coarse = (rng.random((SIZE[1] // 16, SIZE[0] // 16)) * 255).astype(np.uint8)
    smooth = np.asarray(Image.fromarray(coarse).resize(SIZE, Image.Resampling.BICUBIC))
    grain = np.clip(smooth + rng.normal(0, 10, smooth.shape), 0, 255).astype(np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(grain).save(buffer, format="JPEG", quality=90)
    return buffer.getvalue()


def write_target(folder: Path, rows: int) -> Path:
    """``rows`` copies of one film split between train and test, and ``DISTINCT`` other
    films in each split."""
    copy = _film(0)
    folder.mkdir(parents=True, exist_ok=True)
    for number, split in enumerate(("train", "test")):
        copies = rows // 2 + (rows % 2 if split == "train" else 0)
        others = [_film(1 + number * DISTINCT + n) for n in range(DISTINCT)]
        images = pa.array([copy] * copies + others, pa.binary())
        pq.write_table(pa.table({"image": images}), folder / f"{split}-00000-of-00001.parquet")
    return folder


def measure(rows: tuple[int, ...] = ROWS) -> dict:
    """Peak memory and wall time of the audit at each size, and the goals checked."""
    found: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="pericurate-audit-memory-") as scratch:
        for n in rows:
            target = write_target(Path(scratch) / f"rows-{n}", n)
            command = pericurate(
                sys.executable,
                "audit",
                str(target),
                "--out",
                str(Path(scratch) / f"out-{n}"),
                "--permutations",
                "99",
            )
            run = run_measured(command, ok_codes=(1,))  # the copies leak: exit 1
            found[str(n)] = {"peak_rss_mib": run.peak_rss_mib, "wall_s": run.wall_s}
    peaks = {int(n): f["peak_rss_mib"] for n, f in found.items()}
    doubled = [(n, 2 * n) for n in peaks if 2 * n in peaks]
    return {
        "rows": found,
        "goal": f"peak at 2n rows <= {GOAL_RATIO} x peak at n; {max(ROWS)} rows <= {GOAL_MIB} MiB",
        "ratios": {f"{b}/{a}": round(peaks[b] / peaks[a], 3) for a, b in doubled},
        "largest_within_goal": max(peaks.values()) <= GOAL_MIB,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.scale.audit_memory", description=__doc__)
    parser.add_argument("--rows", default=",".join(map(str, ROWS)), help="sizes of the group")
    args = parser.parse_args(argv)
    print(json.dumps(measure(tuple(int(n) for n in args.rows.split(",") if n)), indent=1))


if __name__ == "__main__":
    main()
