"""The hash step's ``Hashes``, held column-wise, reads exactly as the ``{film: {view: bytes}}``
mapping it replaced."""

from __future__ import annotations

import random

import numpy as np
import pytest

from curation.hashes.hash_films import Hashes
from curation.hashes.hashing import View


def _views(seed: int) -> dict[View, bytes]:
    rng = random.Random(seed)
    return {view: rng.randbytes(64) for view in View}


def test_hashes_read_as_the_mapping_they_were_made_from():
    by_film = {film: _views(n) for n, film in enumerate(("010001", "010011", "009991"))}
    hashes = Hashes.from_views(by_film)
    assert hashes == by_film and dict(hashes.items()) == by_film
    assert list(hashes) == list(by_film) and len(hashes) == 3
    assert "010011" in hashes and "010021" not in hashes
    assert hashes["009991"][View.rot90] == by_film["009991"][View.rot90]
    with pytest.raises(KeyError):
        hashes["010021"]


def test_codes_are_the_films_hashes_in_the_order_asked():
    by_film = {film: _views(n) for n, film in enumerate(("a", "b", "c"))}
    codes = Hashes.from_views(by_film).codes(View.mirror, ["c", "a"])
    assert codes.dtype == np.uint8 and codes.shape == (2, 64)
    assert [row.tobytes() for row in codes] == [by_film[f][View.mirror] for f in ("c", "a")]


def test_no_films_no_hashes():
    assert Hashes.from_views({}) == {} and len(Hashes.from_views({})) == 0
