import numpy as np

from curation.hashes import pairs
from curation.hashes.pairs import self_pairs


def _correlated_codes(n: int, seed: int) -> np.ndarray:
    """Codes in groups around a few centres, so many pairs fall near the radius."""
    rng = np.random.default_rng(seed)
    centres = rng.integers(0, 2, (8, 512), dtype=np.uint8)
    bits = centres[rng.integers(0, 8, n)]
    flips = rng.random((n, 512)) < rng.uniform(0.0, 0.06, (n, 1))
    return np.packbits(bits ^ flips, axis=1)


def _brute_force(codes: np.ndarray, max_distance: int) -> list[tuple[int, int, int]]:
    bits = np.unpackbits(codes, axis=1).astype(np.int32)
    dist = (bits[:, None, :] != bits[None, :, :]).sum(-1)
    i, j = np.nonzero(np.triu(dist <= max_distance, k=1))
    return sorted(zip(i.tolist(), j.tolist(), dist[i, j].tolist(), strict=True))


def test_range_search_equals_brute_force_including_the_boundary():
    codes = _correlated_codes(300, seed=0)
    found = [tuple(row) for row in self_pairs(codes, 30).tolist()]
    assert found == _brute_force(codes, 30)
    assert any(d == 30 for *_, d in found), "the sample must exercise the boundary"


def test_distance_31_is_not_a_pair():
    a = np.zeros((2, 64), dtype=np.uint8)
    a[1, :4] = 0xFF  # 32 bits apart
    assert len(self_pairs(a, 31)) == 0
    a[1, 0] = 0x7F  # 31 bits
    assert len(self_pairs(a, 30)) == 0
    assert self_pairs(a, 31).tolist() == [[0, 1, 31]]


def test_tiled_search_equals_brute_force_across_tiles_and_blocks(monkeypatch):
    codes = _correlated_codes(257, seed=5)
    monkeypatch.setattr(pairs, "CODE_TILE", 32)
    monkeypatch.setattr(pairs, "QUERY_BLOCK", 20)
    found = [tuple(row) for row in pairs.self_pairs(codes, 30).tolist()]
    assert found == _brute_force(codes, 30)
