"""``python -m bench.margins.check_scale``: why the pixel check decodes turned and rescaled pairs at
full size. The margins of the real-size test films (``support/film_kit.py``) are measured again
with those full-size decodes replaced by libjpeg-turbo's reduced-scale decodes (1/2, 1/4,
1/8), the cheaper decodes the library offers: its entropy (Huffman) decoding costs the same
at every scale, so a reduced decode saves only the inverse DCT and the cells' sums.

A pair of one size in one orientation is compared as the check compares it (at reduced scale
already); every other pair is decoded at the scale measured (``pixels.compare``'s
``full_scale``). Scale 1 is the check itself (``tests/bench/test_bench_check_scale.py``).

Figures describe the test films only, which are synthetic.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import tempfile
import time
from pathlib import Path

from bench.margins.same_picture import MARGIN, Measure, kit_measures
from curation.hashes.hashing import View
from curation.same_picture.pixels import (
    COMPARE_SIZE,
    SAME_PICTURE_LIMIT,
    Comparison,
    compare,
    unaligned_cells,
)

SCALES = (1, 2, 4, 8)


def compare_at_scale(path_a: Path, path_b: Path, view: View, scale: int) -> Comparison:
    """Film A turned by ``view`` against film B, the check's full-size decodes made at
    1/scale (scale 1: the check itself)."""
    return compare(path_a, path_b, view, full_scale=scale)


def measure(scales: tuple[int, ...] = SCALES) -> dict[int, list[Measure]]:
    """The kit's measures at each scale."""
    return {s: kit_measures(functools.partial(compare_at_scale, scale=s)) for s in scales}


def decode_ms(scales: tuple[int, ...] = SCALES, repeats: int = 20) -> dict[int, float]:
    """Median milliseconds to decode one real-size test film to grey at each scale, cells
    included (one core; the kit's films of ``support/same_picture_cases.py``)."""
    from support import same_picture_cases as cases
    from support.film_kit import film, save

    with tempfile.TemporaryDirectory(prefix="pericurate-scale-") as folder:
        paths = [save(film(seed), Path(folder) / f"{seed}.jpg", 92) for seed in cases.SEEDS]
        timings: dict[int, list[float]] = {s: [] for s in scales}
        for _ in range(repeats):
            for scale in scales:
                for path in paths:
                    start = time.perf_counter()
                    unaligned_cells(path.read_bytes(), COMPARE_SIZE, scale)
                    timings[scale].append(time.perf_counter() - start)
    return {s: round(statistics.median(t) * 1000, 2) for s, t in timings.items()}


def table(by_scale: dict[int, list[Measure]], milliseconds: dict[int, float]) -> str:
    """Largest copy and smallest distinct difference per relation, one column per scale."""
    scales = sorted(by_scale)
    kinds = sorted({(m.side, m.kind) for m in by_scale[scales[0]]})
    head = ["relation", "side", *(f"1/{s}" if s > 1 else "full size" for s in scales)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for side, kind in kinds:
        pick = max if side == "copy" else min
        values = [
            pick(m.difference for m in by_scale[s] if (m.side, m.kind) == (side, kind))
            for s in scales
        ]
        lines.append(f"| {kind} | {side} | " + " | ".join(f"{v:.3f}" for v in values) + " |")
    ceiling = SAME_PICTURE_LIMIT / (1 + MARGIN)
    largest = [max(m.difference for m in by_scale[s] if m.side == "copy") for s in scales]
    lines.append(
        f"| largest copy (a quarter of margin below the limit {SAME_PICTURE_LIMIT} needs <= "
        f"{ceiling:.2f}) | copy | " + " | ".join(f"{v:.3f}" for v in largest) + " |"
    )
    lines.append(
        "| decode and cells, ms per film (one core, median) | | "
        + " | ".join(f"{milliseconds[s]:.2f}" for s in scales)
        + " |"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.margins.check_scale", description=__doc__
    )
    parser.add_argument("--scales", default=",".join(map(str, SCALES)), help="e.g. 1,2")
    args = parser.parse_args(argv)
    scales = tuple(int(s) for s in args.scales.split(","))
    print(table(measure(scales), decode_ms(scales)))


if __name__ == "__main__":
    main()
