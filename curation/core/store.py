"""Arrays computed from one file's content, on disk, keyed by its sha256: what a worker
computed stays where any process that sees the build folder (on any node) reads it again, and
the driver holds only the keys.

Held in memory, every film's local features would cost the driver tens of kilobytes a film
(gigabytes at a million films); on disk they cost it nothing, and a rerun finds them again.
One file per content (``<version folder>/<first two hex digits>/<sha256>.arrays``: one line
of JSON naming each array's dtype and shape, then their bytes), written atomically, so
concurrent workers never see half a file, and two workers computing the same content write
the same bytes. A store is one ``version`` (what computed its arrays): a new version starts
in a folder of its own. A file that cannot be read counts as absent and is computed again:
a store can only cost time. Not numpy's ``.npy``: parsing one ``.npy`` header per array
cost ten times the read of a film's features.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from curation.core.atomic import atomic_path

Arrays = dict[str, np.ndarray]
VERSION_FILE = "VERSION"  # the version's full text, for a reader of the folder


@dataclass(frozen=True)
class ArrayStore:
    """Named arrays by sha256 below ``root``, for one ``version``. Plain data: it travels
    to workers by pickle and names the same files there."""

    root: Path
    version: str

    @property
    def folder(self) -> Path:
        """This version's folder (a digest of the version: versions hold '/' and ':')."""
        return self.root / hashlib.sha256(self.version.encode("utf-8")).hexdigest()[:16]

    def path(self, sha256: str) -> Path:
        """The file of one content."""
        return self.folder / sha256[:2] / f"{sha256}.arrays"

    def __contains__(self, sha256: object) -> bool:
        return isinstance(sha256, str) and self.path(sha256).is_file()

    def put(self, sha256: str, arrays: Arrays) -> None:
        """Store ``arrays`` for ``sha256``, atomically."""
        version_file = self.folder / VERSION_FILE
        if not version_file.exists():
            with atomic_path(version_file) as tmp:
                tmp.write_text(self.version + "\n", encoding="utf-8")
        names = sorted(arrays)
        held = [np.ascontiguousarray(arrays[name]) for name in names]
        layout = [[name, a.dtype.str, list(a.shape)] for name, a in zip(names, held, strict=True)]
        with atomic_path(self.path(sha256)) as tmp, tmp.open("wb") as stream:
            stream.write(json.dumps(layout, separators=(",", ":")).encode("ascii") + b"\n")
            for array in held:
                stream.write(array.tobytes())

    def get(self, sha256: str) -> Arrays | None:
        """The arrays stored for ``sha256``, or ``None`` when there are none or the file is
        unreadable (then it is computed again)."""
        try:
            data = self.path(sha256).read_bytes()
            end = data.index(b"\n")
            arrays: Arrays = {}
            at = end + 1
            for name, dtype, shape in json.loads(data[:end]):
                kind = np.dtype(dtype)
                if kind.hasobject or min(shape, default=0) < 0:  # never unpickle
                    return None
                count = int(np.prod(shape, dtype=np.int64))
                array = np.frombuffer(data, kind, count, at).reshape(shape)
                arrays[str(name)], at = array, at + array.nbytes
        except (OSError, ValueError, TypeError, json.JSONDecodeError):
            return None
        return arrays if at == len(data) else None

    def kept(self, sha256: str, compute: Callable[[], Arrays]) -> Arrays:
        """The arrays stored for ``sha256``; when there are none, ``compute``'s, stored first:
        a piece of a long search or verification done once, kept for a run that stops
        midway and runs again."""
        arrays = self.get(sha256)
        if arrays is None:
            arrays = compute()
            self.put(sha256, arrays)
        return arrays

    def _layout(self, sha256: str) -> dict[str, tuple[np.dtype, tuple[int, ...], int]] | None:
        """Each array's dtype, shape and offset in the file of ``sha256``, read from its first
        line alone; ``None`` when the file is missing, holds an object array or is not as long
        as its first line says (cut short, or written by something else)."""
        path = self.path(sha256)
        try:
            with path.open("rb") as stream:
                header = stream.readline()
                size = os.fstat(stream.fileno()).st_size
            at, found = len(header), {}
            for name, dtype, shape in json.loads(header):
                kind = np.dtype(dtype)
                if kind.hasobject or min(shape, default=0) < 0:  # never unpickle
                    return None
                found[str(name)] = (kind, tuple(int(side) for side in shape), at)
                at += int(np.prod(shape, dtype=np.int64)) * kind.itemsize
        except (OSError, ValueError, TypeError, json.JSONDecodeError):
            return None
        return found if at == size else None

    def holds(self, sha256: str) -> bool:
        """Whether a whole file is stored for ``sha256``, its first line read, not its arrays:
        a rerun that only needs to know reads no gigabytes."""
        return self._layout(sha256) is not None

    def rows(self, sha256: str, name: str, wanted: np.ndarray) -> np.ndarray | None:
        """Rows ``wanted`` (indexes on its first axis) of the array ``name`` stored for
        ``sha256``, read through a memory map, not the whole file: a search that needs a few
        films of each block would otherwise read every block whole. ``None`` as ``get``."""
        layout = self._layout(sha256)
        if layout is None or name not in layout or not layout[name][1]:
            return None
        kind, shape, offset = layout[name]
        try:
            return np.array(np.memmap(self.path(sha256), kind, "r", offset, shape)[wanted])
        except (OSError, ValueError, IndexError):
            return None

    def drop_other_versions(self) -> None:
        """Remove the folders of every other version below ``root``: nothing reads them."""
        if not self.root.is_dir():
            return
        for other in self.root.iterdir():
            if other.is_dir() and other != self.folder and (other / VERSION_FILE).exists():
                shutil.rmtree(other, ignore_errors=True)
