"""``python -m bench.check_scale``: why the pixel check decodes turned and rescaled pairs at
full size. The margins of the real-size test films (``tests/film_kit.py``) are measured again
with those full-size decodes replaced by libjpeg-turbo's reduced-scale decodes (1/2, 1/4,
1/8), the cheaper decodes the library offers: its entropy (Huffman) decoding costs the same
at every scale, so a reduced decode saves only the inverse DCT and the cells' sums.

A pair of one size in one orientation is compared as the check compares it (at reduced scale
already); every other pair is decoded at the scale measured, its cells taken over exactly its
picture area (Pillow's BOX with the decoded area as its box, as the check's own reduced-scale
path does). Scale 1 is the check itself (``tests/test_bench_check_scale.py``).

Figures describe the test films only, which are synthetic.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import simplejpeg
from PIL import Image

from bench.margins import MARGIN, Measure, kit_measures
from curation.hashing import View
from curation.pixels import (
    COMPARE_SIZE,
    SAME_PICTURE_LIMIT,
    Comparison,
    box_cells,
    compare,
    fit_exposure,
)

SCALES = (1, 2, 4, 8)
QUARTER_TURNS = (View.rot90, View.rot270)
TURN = {
    View.mirror: Image.Transpose.FLIP_LEFT_RIGHT,
    View.rot90: Image.Transpose.ROTATE_90,
    View.rot180: Image.Transpose.ROTATE_180,
    View.rot270: Image.Transpose.ROTATE_270,
}


def cells_at_scale(path: Path, grid: tuple[int, int], scale: int) -> np.ndarray:
    """The film's mean grey level per cell of ``grid`` (width, height), decoded at 1/scale."""
    data = path.read_bytes()
    height, width = simplejpeg.decode_jpeg_header(data)[:2]
    if scale == 1:
        return box_cells(simplejpeg.decode_jpeg(data, colorspace="GRAY")[..., 0], grid)
    smallest = {"min_width": -(-width // scale), "min_height": -(-height // scale)}
    grey = simplejpeg.decode_jpeg(data, colorspace="GRAY", min_factor=scale, **smallest)
    image = Image.fromarray(grey[..., 0]).convert("F")
    box = (0, 0, width / scale, height / scale)
    return np.asarray(image.resize(grid, Image.Resampling.BOX, box=box), np.float64)


def compare_at_scale(path_a: Path, path_b: Path, view: View, scale: int) -> Comparison:
    """Film A turned by ``view`` against film B, full-size decodes made at 1/scale."""
    with Image.open(path_a) as a, Image.open(path_b) as b:
        size_a, size_b = a.size, b.size
    turned_a = size_a[::-1] if view in QUARTER_TURNS else size_a
    if turned_a == size_b and view is View.identity:
        return compare(path_a, path_b, view)  # the check's reduced-scale path already
    grid_b = COMPARE_SIZE if size_b[0] >= size_b[1] else COMPARE_SIZE[::-1]
    grid_a = grid_b[::-1] if view in QUARTER_TURNS else grid_b
    cells_a = cells_at_scale(path_a, grid_a, scale)
    if view in TURN:
        cells_a = np.asarray(Image.fromarray(cells_a.astype(np.float32)).transpose(TURN[view]))
    exposure, difference = fit_exposure(cells_a, cells_at_scale(path_b, grid_b, scale))
    return Comparison(difference, exposure, turned_a == size_b)


def measure(scales: tuple[int, ...] = SCALES) -> dict[int, list[Measure]]:
    """The kit's measures at each scale."""
    return {s: kit_measures(functools.partial(compare_at_scale, scale=s)) for s in scales}


def decode_ms(scales: tuple[int, ...] = SCALES, repeats: int = 20) -> dict[int, float]:
    """Median milliseconds to decode one real-size test film to grey at each scale, cells
    included (one core; the kit's films of ``tests/test_same_picture.py``)."""
    from tests import test_same_picture as cases
    from tests.film_kit import film, save

    with tempfile.TemporaryDirectory(prefix="pericurate-scale-") as folder:
        paths = [save(film(seed), Path(folder) / f"{seed}.jpg", 92) for seed in cases.SEEDS]
        timings: dict[int, list[float]] = {s: [] for s in scales}
        for _ in range(repeats):
            for scale in scales:
                for path in paths:
                    start = time.perf_counter()
                    cells_at_scale(path, COMPARE_SIZE, scale)
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
    parser = argparse.ArgumentParser(prog="python -m bench.check_scale", description=__doc__)
    parser.add_argument("--scales", default=",".join(map(str, SCALES)), help="e.g. 1,2")
    args = parser.parse_args(argv)
    scales = tuple(int(s) for s in args.scales.split(","))
    print(table(measure(scales), decode_ms(scales)))


if __name__ == "__main__":
    main()
