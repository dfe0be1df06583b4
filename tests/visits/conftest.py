"""What the visits' tests share."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from curation.visits.descriptors import VisitFeatures


def _random_features(films: int, descriptors: int, seed: int) -> list[VisitFeatures]:
    rng = np.random.default_rng(seed)
    return [
        VisitFeatures(
            rng.random((descriptors, 2), dtype=np.float32),
            (rng.random((descriptors, 128)) * 40).astype(np.uint8),
            (400, 200),
        )
        for _ in range(films)
    ]


@pytest.fixture
def random_features() -> Callable[[int, int, int], list[VisitFeatures]]:
    """Films of random descriptors (``films``, ``descriptors`` each, ``seed``): vectors to
    search, no anatomy to verify."""
    return _random_features
