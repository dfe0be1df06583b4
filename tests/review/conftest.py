"""The films every review test draws its page from."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.review.review_records import HOSTILE, noisy_jpeg


@pytest.fixture
def films(tmp_path: Path) -> dict[str, Path]:
    """Landscape films like panoramic radiographs, scaled down, and one turned film."""
    source = tmp_path / "source"
    source.mkdir()
    ids = [f"f{i}" for i in range(1, 10)] + [HOSTILE]
    paths = {film: noisy_jpeg(source / f"{n}.jpg", (480, 252), n) for n, film in enumerate(ids)}
    paths["turned"] = noisy_jpeg(source / "turned.jpg", (252, 480), 99)
    return paths
