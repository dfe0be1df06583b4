"""Each keeper limit lies between what real films measured on its two sides: the figures
``python -m bench.keeper.bordered`` recorded in ``bench/keeper/keeper.json`` (real
development films, bordered or not, and their altered copies). A limit moved past the nearest
film of either side, or a run of the bench whose films no longer leave room for it, fails
here; a limit moved within the room the films leave is a choice the figures allow."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from curation.keeper.frame import (
    CONTENT_TOLERANCE,
    CORNER_MIN_SHARE,
    UPSCALE_BEYOND_SHARE,
    UPSCALE_FIT,
    UPSCALE_LEAD,
    UPSCALE_STRETCH,
)

RECORDED = Path(__file__).resolve().parents[2] / "bench" / "keeper" / "keeper.json"


def _measured() -> dict[str, dict[str, float]]:
    found: dict[str, dict[str, float]] = json.loads(RECORDED.read_text())["real_films_bordered"][
        "check"
    ]["margins"]
    return found


def _largest(*names: str) -> float:
    return max(_measured()[name]["largest"] for name in names)


def _smallest(*names: str) -> float:
    return min(_measured()[name]["smallest"] for name in names)


# limit: (its value, whether what it admits lies at or under it, the two sides measured: the
# largest figure below the limit, the smallest above it)
LIMITS = {
    "UPSCALE_BEYOND_SHARE": (
        UPSCALE_BEYOND_SHARE,
        True,
        lambda: _largest("upscale beyond share: upscale copies"),
        lambda: _smallest("upscale beyond share: originals over downscales"),
    ),
    "UPSCALE_LEAD": (
        UPSCALE_LEAD,
        False,
        lambda: _largest("upscale lead: originals over downscales at a higher quality"),
        lambda: _smallest("upscale lead: upscale copies"),
    ),
    "UPSCALE_FIT": (
        UPSCALE_FIT,
        True,
        lambda: _largest("upscale fit: upscale copies"),
        lambda: _smallest(
            "upscale fit: originals over crops and other reframed copies",
            "upscale fit: other larger copies (pads)",
        ),
    ),
    "UPSCALE_STRETCH": (
        UPSCALE_STRETCH,
        True,
        lambda: _largest("upscale stretch: upscale copies"),
        lambda: _smallest("upscale stretch: originals over width-only resizes"),
    ),
    "CONTENT_TOLERANCE (a pad's content ratio, less one)": (
        CONTENT_TOLERANCE,
        True,
        lambda: _largest("content ratio: pad copies over their originals") - 1,
        lambda: _smallest("content ratio: originals over crops of 3-6 %") - 1,
    ),
    "CORNER_MIN_SHARE": (
        CORNER_MIN_SHARE,
        False,
        lambda: _largest("corners: bordered originals"),
        lambda: _smallest("corners: rotated copies"),
    ),
}


@pytest.mark.parametrize("name", LIMITS)
def test_each_limit_lies_between_the_real_films_on_its_two_sides(name: str) -> None:
    limit, admits_below, below, above = LIMITS[name]
    if admits_below:  # an upscale, a pad's content: at or under the limit
        assert below() <= limit < above(), (name, below(), limit, above())
    else:  # an upscale's lead, a turned copy's corners: at or above the limit
        assert below() < limit <= above(), (name, below(), limit, above())
