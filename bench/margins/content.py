"""``python -m bench.margins.content``: the content check's thresholds against real films.

Reads the real radiographs of ``../shared/realfilms-dev`` (120 at 512 x 512 in ``films/``, 25
grey at their native ~2,943 x 1,435 in ``films-native/``; read here, never copied into the
repository) and says plainly that it skipped when the folder is absent. Beside them it makes
films with no content: blank (black, white, mid-grey), near-black and uniform ones carrying
sensor noise, an exposure gradient or a small bright label, each at an archive size (grey,
quality 90) and at 512 x 512 (colour, quality 75). It prints the figures of
``curation.hashes.content``, read on the hash step's own decode, on both sides, on each half
of the real films (alternate files by name: the thresholds were chosen on the first half), and
the margins: the darkest real film against the brightest near-black one, the least spread real
film against the most spread uniform one.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
from PIL import Image

from curation.hashes.content import BLANK_SPREAD, DARK_BRIGHTNESS, ContentFigures, content_figures
from curation.hashes.hashing import AverageHash512

SHARED = Path(__file__).resolve().parents[3] / "shared" / "realfilms-dev"
ARCHIVE_SIZE = (2400, 1280)  # width, height
SMALL_SIZE = (512, 512)


def _empty_pictures(size: tuple[int, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Films with no radiographic content, as float grey levels (height x width): which
    figure must catch each is in its name (``dark`` or ``uniform``)."""
    width, height = size
    flat = np.ones((height, width))
    noise = rng.normal(0.0, 1.0, (height, width))
    falloff = np.linspace(0.0, 1.0, width)[None, :] * flat
    label = flat * 8.0
    label[height // 20 : height // 10, width // 30 : width // 12] = 255.0  # ~0.3% of the area
    return {
        "dark: black": flat * 0.0,
        "dark: near-black 12, noise sd 6": 12.0 + 6.0 * noise,
        "dark: near-black, gradient 0-40, noise sd 4": 40.0 * falloff + 4.0 * noise,
        "dark: near-black with a white label": label,
        "uniform: white": flat * 255.0,
        "uniform: mid-grey": flat * 128.0,
        "uniform: grey 128, noise sd 20": 128.0 + 20.0 * noise,
        "uniform: white 245, noise sd 10": 245.0 + 10.0 * noise,
        "uniform: grey, gradient 110-140, noise sd 4": 110.0 + 30.0 * falloff + 4.0 * noise,
    }


def _jpeg(grey: np.ndarray, colour: bool, quality: int) -> bytes:
    picture = Image.fromarray(np.clip(grey, 0, 255).round().astype(np.uint8), "L")
    buffer = io.BytesIO()
    (picture.convert("RGB") if colour else picture).save(buffer, "JPEG", quality=quality)
    return buffer.getvalue()


def film_figures(data: bytes) -> ContentFigures:
    """A film's figures as the hash step reads them: on its strict draft decode."""
    grey = AverageHash512().open_grey(io.BytesIO(data), strict=True)
    with Image.open(io.BytesIO(data)) as image:
        return content_figures(grey, image.width)


def empty_figures(seed: int = 0) -> dict[str, ContentFigures]:
    """Every empty film's figures, at the archive's size and at the real films' 512."""
    rng = np.random.default_rng(seed)
    found = {}
    for size, colour, quality in ((ARCHIVE_SIZE, False, 90), (SMALL_SIZE, True, 75)):
        for name, grey in _empty_pictures(size, rng).items():
            found[f"{name} ({size[0]}x{size[1]})"] = film_figures(_jpeg(grey, colour, quality))
    return found


def _real(folder: str) -> dict[str, ContentFigures]:
    paths = sorted((SHARED / folder).glob("*.jpg"))
    return {p.name: film_figures(p.read_bytes()) for p in paths}


def measure() -> dict[str, object]:
    """The figures and margins; ``{"skipped": ...}`` when the real films are absent."""
    if not (SHARED / "films").is_dir():
        return {"skipped": f"bench.margins.content skipped: {SHARED} is absent."}
    real = {**_real("films"), **{f"native/{k}": v for k, v in _real("films-native").items()}}
    names = sorted(real)
    halves = {"chosen on (first half)": names[0::2], "held out (second half)": names[1::2]}
    empty = empty_figures()
    dark = max(f.brightness for n, f in empty.items() if n.startswith("dark"))
    uniform = max(f.spread for n, f in empty.items() if n.startswith("uniform"))
    report: dict[str, object] = {
        "thresholds": {"DARK_BRIGHTNESS": DARK_BRIGHTNESS, "BLANK_SPREAD": BLANK_SPREAD},
        "empty films": {n: [f.brightness, f.spread] for n, f in empty.items()},
        "brightest near-black film": dark,
        "most spread uniform film": uniform,
    }
    for half, members in halves.items():
        darkest = min(members, key=lambda n: real[n].brightness)
        flattest = min(members, key=lambda n: real[n].spread)
        report[half] = {
            "films": len(members),
            "darkest real film": [darkest, real[darkest].brightness],
            "least spread real film": [flattest, real[flattest].spread],
            "brightness margin (real min - empty max)": real[darkest].brightness - dark,
            "spread margin (real min - empty max)": real[flattest].spread - uniform,
            "real films rejected": sum(
                1
                for n in members
                if real[n].brightness < DARK_BRIGHTNESS or real[n].spread < BLANK_SPREAD
            ),
        }
    report["empty films kept"] = sorted(
        n for n, f in empty.items() if f.brightness >= DARK_BRIGHTNESS and f.spread >= BLANK_SPREAD
    )
    return report


def main() -> None:
    print(json.dumps(measure(), indent=2))


if __name__ == "__main__":
    main()
