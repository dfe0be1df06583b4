"""The films' projected vectors on disk, one block of films a file: what the visits' search reads,
by range of films (the exact search's tiles) or by film (the inverted file's lists)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from curation.core.store import ArrayStore
from curation.visits.stored import missing, stored_arrays, stored_rows

WHAT = "a block of the films' vectors is"


@dataclass(frozen=True)
class VectorBlocks:
    """The films' projected vectors, stored one block of ``size`` films per file (the exact
    search's indexed block, in the films' order): a tile reads a few files, not one per film;
    reading 5,120 files cost a tile more than its products (docs/scale.md, "The visits' search
    at scale")."""

    store: ArrayStore
    names: list[str]  # block n holds films n * size up to (n + 1) * size
    size: int
    count: int
    width: int

    def covering(self, films: range) -> tuple[list[str], int]:
        """The blocks that hold ``films``, and where the first of them starts in the first."""
        first, last = films.start // self.size, (films.stop - 1) // self.size
        return self.names[first : last + 1], films.start - first * self.size

    def films(self, films: np.ndarray, columns: int | None = None) -> np.ndarray:
        """The vectors of ``films`` (indexes, ascending), one row each, their first ``columns``
        (all by default): from each block only the rows asked for."""
        rows = np.zeros((len(films), min(columns or self.width, self.width)), np.float32)
        block_of = films // self.size
        for block in np.unique(block_of):
            at = np.flatnonzero(block_of == block)
            name = self.names[int(block)]
            read = stored_rows(
                self.store, name, "vectors", films[at] - int(block) * self.size, WHAT
            )
            if read.shape[1:] != (self.width,):
                raise missing(self.store, name, WHAT)
            rows[at] = read[:, : rows.shape[1]]
        return rows


def range_rows(store: ArrayStore, names: list[str], offset: int, films: int) -> np.ndarray:
    """``films`` vectors from the blocks ``names``, from ``offset`` in the first."""
    read = [stored_arrays(store, name, WHAT)["vectors"] for name in names]
    return np.concatenate(read)[offset : offset + films]
