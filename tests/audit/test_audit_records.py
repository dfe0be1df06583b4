"""What the audit holds per row (``curation.leaks.target.Film``): no dictionary or list of
its own, the strings every row repeats held once, and a bounded number of bytes. Counted over
the objects the records reach, not timed."""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from curation.hashes.hashing import HASH_BYTES, AverageHash512, View
from curation.leaks.scan import scan
from curation.leaks.target import (
    TURNED_VIEWS,
    Columns,
    Film,
    find_shards,
    read_image,
    resolve_columns,
)
from tests.audit.test_audit_at_scale import FILMS, write_target

RECORD_BYTES = 1024  # per row, at most (measured: docs/scale.md, "The audit on two nodes")


def scanned(folder: Path) -> list[Film]:
    shards = find_shards(write_target(folder))
    names = resolve_columns(shards, Columns())
    return scan(shards, names, AverageHash512(), ("ahash",))


def reached(film: Film) -> Iterator[Any]:
    """The film's record and every object it holds (containers opened)."""
    stack: list[Any] = [film]
    while stack:
        value = stack.pop()
        yield value
        if isinstance(value, Film):
            stack += [getattr(value, name) for name in Film.__slots__]
        elif isinstance(value, dict):
            stack += [*value.keys(), *value.values()]
        elif isinstance(value, list | tuple):
            stack += list(value)


def test_a_row_holds_no_container_and_shares_what_every_row_repeats(tmp_path: Path) -> None:
    films = scanned(tmp_path / "target")
    assert len(films) == 2 * FILMS
    held = [value for film in films for value in reached(film)]
    assert not [v for v in held if isinstance(v, dict | list)]
    assert len({id(f.split) for f in films}) == len({f.split for f in films}) == 2
    assert len({id(f.header) for f in films}) == len({f.header for f in films}) == 1
    distinct = {id(value): value for value in held}
    per_row = sum(sys.getsizeof(v) for v in distinct.values()) / len(films)
    assert per_row <= RECORD_BYTES


def test_the_compact_codes_are_the_hashers_views(tmp_path: Path) -> None:
    films = scanned(tmp_path / "target")
    first = films[0]
    assert first.split == "test"
    hasher = AverageHash512()
    image = read_image(tmp_path / "target" / "test-00000-of-00001.parquet", 0, "image")
    views = hasher.hash_grey_views(hasher.open_grey(io.BytesIO(image)))
    assert first.code("ahash") == first.ahash == views[View.identity]
    assert len(first.turned) == len(TURNED_VIEWS) * HASH_BYTES
    assert [first.turned_code(v.value) for v in TURNED_VIEWS] == [views[v] for v in TURNED_VIEWS]
