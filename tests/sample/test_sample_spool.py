"""The sample writer keeps the drawn films on disk until it writes the zip: it held them all
in memory, which a corpus of 64,000 originals (``bench.scale``) cannot be on a 24 GiB machine.
The films are drawn in this process here, so no worker is forked while traced."""

from __future__ import annotations

import tracemalloc
import zipfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from curation.drawing.render import RenderJob
from curation.sample import archive


def test_what_the_writer_holds_does_not_grow_with_the_films_drawn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    held: list[int] = []  # traced bytes once the writer has taken each family's films
    later = [0]  # bytes drawn after the first family (whose drawing fills the noise cache)

    def drawn_here(
        draw: Callable[[RenderJob], dict[str, bytes]], jobs: Sequence[RenderJob], **_: int
    ) -> Iterator[dict[str, bytes]]:
        for number, job in enumerate(jobs):
            films = draw(job)
            later[0] += sum(map(len, films.values())) if number else 0
            yield films
            held.append(tracemalloc.get_traced_memory()[0])

    monkeypatch.setattr(archive, "ordered_map", drawn_here)
    dest = tmp_path / "sample.zip"
    tracemalloc.start()
    try:
        archive.write_sample_archive(dest, seed=3, films=archive.MIN_FILMS)
    finally:
        tracemalloc.stop()
    assert later[0] > 10_000_000  # the films are what weighs
    assert held[-1] - held[0] < later[0] / 10
    with zipfile.ZipFile(dest) as written:
        names = [i.filename for i in written.infolist()]
        assert sum(len(written.read(n)) for n in names if not n.endswith(".xml")) > later[0]
    assert names == sorted(names)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sample.truth.json", "sample.zip"]
