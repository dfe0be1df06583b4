"""The hostile source the data tests build from."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.hostile.hostile_data_source import (
    FULLWIDTH,
    UNDERSTOOD_NOT,
    film_with_patient_text,
    good_films,
)
from tests.hostile_films import ANNOTS, FILMS, film_bytes, voc, write_source


@pytest.fixture(scope="module")
def hostile_source(tmp_path_factory) -> Path:
    films = good_films()
    for k, case in enumerate(sorted(UNDERSTOOD_NOT)):
        films[f"{5000 + k}1"] = (film_bytes(200 + k), UNDERSTOOD_NOT[case][0])
    films["60001"] = (film_with_patient_text(), voc("60001"))
    root = write_source(tmp_path_factory.mktemp("hostile-data-source"), films)
    (root / FILMS / f"{FULLWIDTH}.jpg").write_bytes(film_bytes(300))
    (root / ANNOTS / f"{FULLWIDTH}.xml").write_text(voc("39991"), encoding="utf-8")
    return root
