"""The source a build reads: what ``pericurate download`` fetched, recorded in
``BUILD/work/source.json`` so that every later command reads the same films."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from curation.core.atomic import write_json
from curation.core.errors import SourceError

# The real archive: where it is published, and how every build's summary and card credit it.
DEFAULT_URL = "https://data.mendeley.com/public-api/zip/kx52tk2ddj/download/3"
SOURCE_CITATION = (
    "Do et al. (2024). Panoramic radiographs with periapical lesions. Mendeley Data, V3. "
    "doi:10.17632/kx52tk2ddj.3"
)
SOURCE_DOI = "10.17632/kx52tk2ddj.3"
SOURCE_LICENSE = "CC BY 4.0"


@dataclass(frozen=True)
class Source:
    """Where the films come from: the folder holding ``Periapical Dataset/``, the URL, zip
    or folder it came from, the archive's sha256 and size (None for a folder), the archive
    members not extracted, and the archive's own zip comment (the sample declares itself)."""

    root: Path
    origin: str
    sha256: str | None = None
    size: int | None = None
    skipped: tuple[str, ...] = ()
    comment: str = ""

    def save(self, path: Path) -> None:
        """Write the record atomically (``load`` reads it back)."""
        write_json(
            path,
            {
                "root": str(self.root),
                "origin": self.origin,
                "sha256": self.sha256,
                "size": self.size,
                "skipped": list(self.skipped),
                "comment": self.comment,
            },
        )

    @classmethod
    def load(cls, path: Path) -> Source:
        """The record at ``path``; a missing or damaged record is a ``SourceError``."""
        if not path.exists():
            raise SourceError(f"{path}: no source yet; run `pericurate download` first.")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            source = cls(
                Path(data["root"]),
                str(data["origin"]),
                data["sha256"],
                data["size"],
                tuple(data["skipped"]),
                str(data["comment"]),
            )
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise SourceError(
                f"{path}: not a valid source record ({type(error).__name__}); "
                "run `pericurate download` again."
            ) from None
        if not all(isinstance(name, str) for name in source.skipped):
            raise SourceError(
                f"{path}: not a valid source record; run `pericurate download` again."
            )
        return source


LOCK_NAME = "source.lock.json"
# Where earlier versions kept the lock: the folder the command ran in.
OLD_LOCK = Path(LOCK_NAME)


def lock_path(build: Path, lock: Path | None) -> Path:
    """The source lock a command uses: ``lock`` when given, else the build folder's, else one
    an earlier version left in the working folder (``OLD_LOCK``) when only that one exists."""
    if lock is not None:
        return lock
    in_build = build / LOCK_NAME
    return OLD_LOCK if not in_build.exists() and OLD_LOCK.is_file() else in_build


def old_lock_note(lock: Path) -> str | None:
    """One line saying that the lock in use is at its old place, or ``None``."""
    if lock != OLD_LOCK:
        return None
    return (
        f"using ./{LOCK_NAME} (where earlier versions kept the source lock); new builds keep "
        f"it in the build folder: move it to BUILD/{LOCK_NAME} to do the same."
    )
