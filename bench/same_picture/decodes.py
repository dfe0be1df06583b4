"""``python -m bench.same_picture.decodes BUILD``: how many times the copies-only part of a
build (the chain through the keeper step) decodes each film, and which functions decode.

A JPEG decode reads the whole entropy-coded stream at every scale (libjpeg-turbo), so a film
decoded again costs nearly a whole decode each time; this count is what reading each film once
would bring to one (docs/scale.md, "What the CPU goal beside the peers still needs").

``BUILD`` is a folder ``pericurate download`` filled (its ``work/source.json``); the chain runs
in a scratch folder with empty caches, in this process (one worker), so that every decode is
seen: simplejpeg's ``decode_jpeg`` calls, and Pillow's image loads that decode (a load of an
image already decoded is not counted). Each decode is charged to the nearest calling function
of the toolkit. Prints one JSON object.

    uv run --frozen python -m bench.same_picture.decodes BUILD
"""

from __future__ import annotations

import argparse
import inspect
import json
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest.mock import patch

import simplejpeg
from PIL import ImageFile

from curation.chain.executors import LocalExecutor
from curation.chain.runner import curate
from curation.chain.settings import Settings
from curation.core.records import Kind
from curation.source.source import Source

TOOLKIT = "curation."


def _caller() -> str:
    """The nearest function of the toolkit on the stack, as ``module:function``."""
    frame = inspect.currentframe()
    while frame is not None:
        module = str(frame.f_globals.get("__name__", ""))
        if module.startswith(TOOLKIT):
            return f"{module}:{frame.f_code.co_name}"
        frame = frame.f_back
    return "outside the toolkit"


@contextmanager
def counting_decodes() -> Iterator[Counter[str]]:
    """Count, by calling function, the image decodes made while inside: simplejpeg's, and
    Pillow's loads of an image not yet decoded."""
    counted: Counter[str] = Counter()
    decode_jpeg: Callable[..., Any] = simplejpeg.decode_jpeg
    load = ImageFile.ImageFile.load

    def counted_decode(*args: Any, **kwargs: Any) -> Any:
        counted[_caller()] += 1
        return decode_jpeg(*args, **kwargs)

    def counted_load(image: ImageFile.ImageFile) -> Any:
        if image.tile:  # the image's data still to decode
            counted[_caller()] += 1
        return load(image)

    with (
        patch.object(simplejpeg, "decode_jpeg", counted_decode),
        patch.object(ImageFile.ImageFile, "load", counted_load),
    ):
        yield counted


def measure(build: Path) -> dict[str, Any]:
    """The copies-only part of ``build``'s source, cold, in this process: its films, its
    decodes, and the decodes by calling function."""
    source = Source.load(build / "work" / "source.json")
    with tempfile.TemporaryDirectory(prefix="decodes-") as scratch, counting_decodes() as counted:
        outcome = curate(
            source, Path(scratch), Settings(), stop_after="keeper", executor=LocalExecutor(1)
        )
    films = sum(1 for record in outcome.records if record.kind is Kind.image)
    decodes = sum(counted.values())
    return {
        "build": str(build),
        "films": films,
        "decodes": decodes,
        "decodes_per_film": round(decodes / films, 2) if films else None,
        "by_function": dict(counted.most_common()),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.same_picture.decodes", description=__doc__
    )
    parser.add_argument("build", type=Path, help="a build folder (its work/source.json)")
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.build), indent=1))


if __name__ == "__main__":
    main()
