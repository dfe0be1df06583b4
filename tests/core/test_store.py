"""The array store: what one process puts, another gets back, bit for bit; a damaged file
counts as absent; versions live apart."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np

from curation.core.store import ArrayStore

SHA = "ab" + "0" * 62


def _arrays() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    return {
        "descriptors": rng.integers(0, 256, (7, 32), dtype=np.uint8),
        "points": rng.random((7, 2), dtype=np.float32),
        "size": np.array([640, 320], np.int32),
    }


def test_put_then_get_in_another_process_image(tmp_path: Path) -> None:
    store = ArrayStore(tmp_path, "features-v1")
    store.put(SHA, _arrays())
    travelled = pickle.loads(pickle.dumps(store))  # as a worker receives it
    got = travelled.get(SHA)
    assert got is not None and SHA in travelled
    for name, array in _arrays().items():
        assert got[name].dtype == array.dtype and np.array_equal(got[name], array)


def test_same_arrays_same_bytes(tmp_path: Path) -> None:
    first, second = ArrayStore(tmp_path / "a", "v"), ArrayStore(tmp_path / "b", "v")
    first.put(SHA, _arrays())
    second.put(SHA, _arrays())
    assert first.path(SHA).read_bytes() == second.path(SHA).read_bytes()


def test_damaged_or_missing_file_is_absent(tmp_path: Path) -> None:
    store = ArrayStore(tmp_path, "v")
    assert store.get(SHA) is None and SHA not in store
    store.put(SHA, _arrays())
    data = store.path(SHA).read_bytes()
    assert store.holds(SHA)
    store.path(SHA).write_bytes(data[: len(data) // 2])
    assert store.get(SHA) is None and not store.holds(SHA)
    for damaged in (
        b"not arrays at all",
        b'[["a","|O",[1]]]\n' + bytes(8),  # objects would need unpickling
        b'[["a","<f4",[-1]]]\n',
        data + b"more",
    ):
        store.path(SHA).write_bytes(damaged)
        assert store.get(SHA) is None and not store.holds(SHA), damaged
        assert store.rows(SHA, "a", np.array([0])) is None, damaged


def test_versions_apart_and_old_ones_dropped(tmp_path: Path) -> None:
    old, new = ArrayStore(tmp_path, "v1"), ArrayStore(tmp_path, "v2/other:thing")
    old.put(SHA, _arrays())
    assert new.get(SHA) is None
    new.put(SHA, _arrays())
    new.drop_other_versions()
    assert not old.folder.exists() and new.get(SHA) is not None
    assert (new.folder / "VERSION").read_text() == "v2/other:thing\n"


def test_whether_a_file_is_held_is_read_from_its_first_line(tmp_path: Path, monkeypatch) -> None:
    """A rerun of a million films asks of every block of vectors whether it is there: reading
    8.2 GiB to know would cost minutes."""
    store = ArrayStore(tmp_path, "v")
    store.put(SHA, _arrays())
    read: list[Path] = []
    read_bytes = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda path: read.append(path) or read_bytes(path))
    assert store.holds(SHA) and read == []
    assert not store.holds("cd" + "0" * 62)
