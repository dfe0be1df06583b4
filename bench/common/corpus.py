"""The benchmark corpus: a synthetic source at real film size, built once per (seed, films).

Every augmented copy is also filed among the originals under a fresh original stem, so the
chain cannot drop any copy by its name alone and the bench measures the pixel comparisons the
real archive may need.

The zip and its extraction live under ``bench/corpus/`` (git-ignored); a rerun with the same
seed and size reuses them, since the generator gives the same bytes for the same seed.
"""

from __future__ import annotations

from pathlib import Path

from curation.chain.runner import Source
from curation.sample import truth_path, write_sample_archive
from curation.source.download import fetch_source

CORPUS_DIR = Path(__file__).parents[1] / "corpus"
SEED = 7


def corpus_zip(
    films: int, seed: int = SEED, folder: Path = CORPUS_DIR, all_copies_among_originals: bool = True
) -> Path:
    """The corpus archive, written if it (or its truth file) is missing."""
    dest = corpus_path(films, seed, folder, all_copies_among_originals)
    if not (dest.is_file() and truth_path(dest).is_file()):
        write_sample_archive(
            dest, seed=seed, films=films, all_copies_among_originals=all_copies_among_originals
        )
        _lock(dest).unlink(missing_ok=True)  # a regenerated zip is a new source, not a mismatch
    return dest


def corpus_path(
    films: int, seed: int = SEED, folder: Path = CORPUS_DIR, all_copies_among_originals: bool = True
) -> Path:
    """Where the corpus archive of ``films`` originals is (or would be) written."""
    suffix = "-allcopies" if all_copies_among_originals else ""
    return folder / f"sample-{films}-seed{seed}{suffix}.zip"


def _lock(archive: Path) -> Path:
    return archive.parent / archive.stem / "source.lock.json"


def corpus_source(archive: Path) -> Source:
    """The extracted corpus as a ``Source`` (extraction reused when already done)."""
    work = archive.parent / archive.stem
    fetched = fetch_source(str(archive), work, _lock(archive), progress=False)
    return Source(fetched.root, fetched.origin, fetched.sha256, fetched.size, fetched.skipped)
