"""The build's searches by hash in every orientation (the same-picture step's candidates and
the look-alike step's links) run a table of the multi-index a job through the executor's map,
their codes in a folder below the build's ``work`` that the workers see, as the audit's do: at
a million films each was minutes of the driver alone while the workers waited. The rows, and
so the candidates and links, are those of the search in one process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import curation.lookalikes.components
import curation.same_picture.detect
from curation.chain.executors import LocalExecutor
from curation.chain.run import Run
from curation.chain.runner import curate
from curation.chain.settings import Settings
from curation.core.vocabulary import LOOKALIKE_DISTANCE, SAME_PICTURE_RADIUS
from curation.hashes import mapped_pairs
from curation.hashes.hash_films import Hashes
from curation.hashes.hashing import View
from curation.hashes.mapped_pairs import TableJob
from curation.lookalikes.components import lookalike_links
from curation.same_picture.candidates import candidate_pairs
from tests.hashes.test_mapped_pairs import JobsSeen, _near
from tests.hashes.test_multi_index import EVERY, _film_like


def _hashes(films: int) -> Hashes:
    """Films near one another in every view, some turned copies and negatives among them."""
    upright = _film_like(films, seed=31)
    views = {view: _near(upright[::-1], n) for n, view in enumerate(View)}
    views[View.identity] = upright
    upright[films // 2 : films // 2 + 8] = np.bitwise_not(_near(upright[:8], 32))  # negatives
    return Hashes.from_views(
        {
            f"f{n:04d}": {view: codes[n].tobytes() for view, codes in views.items()}
            for n in range(films)
        }
    )


def test_candidates_and_links_searched_a_table_a_job_are_those_of_one_process(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    hashes = _hashes(240)
    here = candidate_pairs(hashes, SAME_PICTURE_RADIUS), lookalike_links(hashes)
    monkeypatch.setattr(mapped_pairs, "INDEX_PAIRS", EVERY)  # every search counts as large
    seen = JobsSeen()
    mapped = (
        candidate_pairs(hashes, SAME_PICTURE_RADIUS, tmp_path / "a", seen),
        lookalike_links(hashes, LOOKALIKE_DISTANCE, tmp_path / "b", seen),
    )
    assert mapped == here
    assert len(here[0]) > 20 and len(here[1]) > 20
    assert any(view is not View.identity for _, _, view, _ in here[0])  # turned candidates
    assert seen.jobs and all(isinstance(job, TableJob) for job in seen.jobs)


def test_a_steps_scratch_folder_is_emptied_first_and_removed_after(tmp_path: Path):
    run = Run(None, tmp_path, Settings(), lambda what, total: None, JobsSeen())  # type: ignore[arg-type]
    left = tmp_path / "work" / "search"
    left.mkdir(parents=True)
    (left / "from a killed run").write_text("")
    with run.scratch("search") as folder:
        assert folder == left and list(folder.iterdir()) == []
    assert not left.exists()


def test_the_builds_searches_by_hash_go_through_the_executors_map(
    monkeypatch: pytest.MonkeyPatch, sample_source: Any, tmp_path: Path
):
    asked: dict[str, tuple[Any, Any]] = {}
    for module, name in (
        (curation.same_picture.detect, "candidate_pairs"),
        (curation.lookalikes.components, "lookalike_links"),
    ):
        function = getattr(module, name)

        def spied(hashes: Any, radius: int, folder: Any = None, map: Any = None, *,
                  f: Any = function, n: str = name) -> Any:  # fmt: skip
            asked[n] = (folder, map)
            assert folder is not None and folder.is_dir()
            return f(hashes, radius, folder, map)

        monkeypatch.setattr(module, name, spied)
    curate(sample_source, tmp_path, Settings(), "lookalikes", executor=LocalExecutor(1))
    assert set(asked) == {"candidate_pairs", "lookalike_links"}
    for folder, map in asked.values():
        assert folder.parent == tmp_path / "work" and not folder.exists()  # removed after
        assert map is not None
