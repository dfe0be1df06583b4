"""``python -m bench.scale.records_memory [--files N]``: driver memory per source file of
the records and hashes a build holds between steps, on a synthetic index (no images).

The records are what the index makes of an archive in its own layout (per original film:
the original, about 1.2 augmented copies in their own folder, and about 2.2 annotation
files; every film an encoder signature, a width and height, its annotation's path and
patient number, and one or two lesions for an original), built the way the index builds
them: every string a fresh object, as read from the index cache or a worker's result. The
augmented copies are then dropped by name (``drop_augmented_by_name``, the originals step),
and the films still in play get their five 64-byte hashes (the hash step's ``Hashes``).

Measured with ``tracemalloc`` (every Python and numpy allocation still held) and as the
growth of the process's resident memory (allocator overheads included, no tracing), each
divided by the number of source files. Runs on the code before the change too (``Hashes``
a plain dict then).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import resource
import tracemalloc
from pathlib import Path

from bench.common.measure import child_json, python_child, run_measured
from curation.core.records import Kind, Lesion, SourceRecord, pending_images
from curation.hashes.hash_films import Hashes
from curation.hashes.hashing import View
from curation.index.originals import drop_augmented_by_name

ROOT = "Periapical Dataset/Periapical Lesions"
ORIGINALS = "Original JPG Images"  # a record's folder is the folder's name
AUGMENTED = "Augmentation JPG Images"
ANNOTATIONS = "Image Annots"
ENCODERS = ("RGB|sampling=2|jfif,dpi", "L|sampling=-1|jfif", "RGB|sampling=0|jfif,exif")
COPIES_PER_ORIGINAL = 1.2  # the 4,000-film corpus: 4,761 augmented copies of 4,038 originals


def fresh(text: str) -> str:
    """``text`` as a new string object, as a parquet read or a worker's result gives it."""
    return "".join(list(text))


def synthetic_records(files: int, seed: int = 0) -> list[SourceRecord]:
    """About ``files`` records of an archive in its own layout, as the index leaves them."""
    rng = random.Random(seed)
    records: list[SourceRecord] = []
    number = 10_000
    while len(records) < files:
        number += 1
        stems = [f"{number}1"] + [f"{number}{2 + k}" for k in range(_copies(rng))]
        for stem in stems:
            folder = ORIGINALS if stem.endswith("1") else AUGMENTED
            xml = f"{ROOT}/{ANNOTATIONS}/{stem}.xml"
            records.append(_film(rng, folder, stem, xml))
            records.append(_annotation(rng, xml, stem))
    return records[:files]


def _copies(rng: random.Random) -> int:
    whole = int(COPIES_PER_ORIGINAL)
    return whole + (rng.random() < COPIES_PER_ORIGINAL - whole)


def _digest(rng: random.Random) -> str:
    return hashlib.sha256(rng.randbytes(8)).hexdigest()


def _film(rng: random.Random, folder: str, stem: str, xml: str) -> SourceRecord:
    lesions = tuple(
        Lesion(tuple(sorted(rng.random() for _ in range(4))), rng.randrange(1, 6))  # type: ignore[arg-type]
        for _ in range(rng.choice((1, 1, 2)) if stem.endswith("1") else 0)
    )
    return SourceRecord(
        fresh(f"{ROOT}/{folder}/{stem}.jpg"),
        Kind.image,
        fresh(stem),
        sha256=_digest(rng),
        size_bytes=rng.randrange(200_000, 900_000),
        folder=fresh(folder),
        width=rng.randrange(2300, 2640),
        height=rng.randrange(1250, 1300),
        annotation=fresh(xml),
        lesions=lesions,
        encoder=fresh(rng.choice(ENCODERS)),
        patient_number=fresh(str(rng.randrange(1, 10**6))),
    )


def _annotation(rng: random.Random, xml: str, stem: str) -> SourceRecord:
    return SourceRecord(
        fresh(xml),
        Kind.annotation,
        fresh(stem),
        sha256=_digest(rng),
        size_bytes=rng.randrange(600, 2000),
        folder=fresh(ANNOTATIONS),
    )


def synthetic_hashes(records: list[SourceRecord], seed: int = 0) -> Hashes:
    """Five 64-byte hashes for every film in play, as the hash step returns them."""
    rng = random.Random(seed)
    films = [r.film_id for r in pending_images(records)]
    views = {film: {v: rng.randbytes(64) for v in View} for film in films}
    # ``Hashes`` was a plain dict before it was held column-wise: measure either.
    return getattr(Hashes, "from_views", dict)(views)


def _resident_bytes() -> int:
    return int(Path("/proc/self/statm").read_text().split()[1]) * resource.getpagesize()


def measure(files: int) -> dict[str, float]:
    """Bytes per source file held by the records after the originals step and the hashes:
    once as the growth of this process's resident memory, once traced (a second build of the
    same records, the first one freed)."""
    resident = _resident_bytes()
    held = drop_augmented_by_name(synthetic_records(files))
    held_hashes = synthetic_hashes(held)
    rss_growth = _resident_bytes() - resident
    del held, held_hashes
    tracemalloc.start()
    records = drop_augmented_by_name(synthetic_records(files))
    after_records = tracemalloc.get_traced_memory()[0]
    hashes = synthetic_hashes(records)
    total, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "source_files": len(records),
        "films_hashed": len(hashes),
        "records_bytes_per_file": round(after_records / len(records), 1),
        "hashes_bytes_per_file": round((total - after_records) / len(records), 1),
        "bytes_per_file": round(total / len(records), 1),
        "peak_traced_bytes_per_file": round(peak / len(records), 1),
        "rss_growth_bytes_per_file": round(rss_growth / len(records), 1),
    }


def part(files: int) -> dict:
    """``make bench``'s part: the measurement in a child process of its own (the driver's
    heap alone), with the child's peak RSS."""
    run = run_measured(python_child("bench.scale.records_memory", "--files", str(files)))
    return {"records_memory": {**child_json(run), "peak_rss_mib": run.peak_rss_mib}}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.scale.records_memory", description=__doc__
    )
    parser.add_argument("--files", type=int, default=1_000_000, help="source files")
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.files)))


if __name__ == "__main__":
    main()
