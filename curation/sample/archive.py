"""Writing the archive: plan, render in worker processes, zip deterministically, write truth."""

from __future__ import annotations

import os
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

import numpy as np
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

import curation.drawing.encoders as encoders
from curation.core.errors import PericurateError
from curation.core.parallel import ordered_map
from curation.drawing.render import RenderJob, render
from curation.sample.annotations import annotation_xml, apply_xml_quirks
from curation.sample.layout import ANNOTS_DIR, JUNK_ARCHIVES, SAMPLE_COMMENT, ZIP_TIME
from curation.sample.planner import Planner
from curation.sample.plants.bad_inputs import plan_bad_inputs
from curation.sample.plants.copies import (
    file_every_copy_among_originals,
    plan_among_originals,
    plan_augmented,
    plan_bordered_original,
    plan_held_out_cases,
)
from curation.sample.plants.planted_visits import plant_visits
from curation.sample.truth import FilmTruth, SampleTruth, truth_path

MIN_FILMS = 30

NOTES = {
    "boxes": "film_truth boxes are pixel corners as annotated in each XML, corners ordered",
    "rotation": (
        "angle follows np.rot90: -90 turns the film clockwise, 90 counter-clockwise, 180 is a "
        "half turn; XML width/height stay the original's"
    ),
    "sixteen_bit": "png data in mode I;16 under a .jpg name",
    "bomb": "16 x 16 JPEG whose SOF0 header claims 20000 x 12000; Pillow refuses it on open",
    "lookalikes": (
        "visits shifted about 1 % and re-exposed; drawn, never filtered by any hash distance"
    ),
    "distant_visits": (
        "visits of one patient shifted up to 4 %, re-exposed and with changed soft tissue"
    ),
    "patient_numbers": (
        "every film of a numbered patient (group) carries one patient number in <filename>; "
        "the template films share one copied number though unrelated; numbers are not "
        "stored in the truth"
    ),
    "refilings": (
        "double_annotated: second filing = 255 * ((v * gain + offset) / 255) ** gamma of the "
        "first's pixels, saved at second_quality"
    ),
    "realistic_visits": (
        "a later visit of a single film: the projection bent, the mouth treated, another "
        "machine's exposure with new noise, exported at the source's size; its boxes are the "
        "source's"
    ),
    "shared_label_films": "two films of different patients with one large burned-in label",
    "sample": "synthetic: figures computed on it say nothing about the real data",
}


def _junk_archive(rng: np.random.Generator) -> bytes:
    return b"Rar!\x1a\x07\x00" + rng.integers(0, 256, size=2048, dtype=np.uint8).tobytes()


class _Spool:
    """The drawn films' bytes on disk, in the order they were drawn, until the zip is written
    in name order. Held in memory, a corpus of 64,000 originals would hold about 23 GB of
    films (the 200-film sample's zip is 72 MB) beside its plan's low-resolution films (about
    190 KB an original, measured at 200 and 800), on a machine of 24 GiB."""

    def __init__(self, file: BinaryIO) -> None:
        self.file = file
        self.at: dict[str, tuple[int, int]] = {}  # name -> where its bytes start, how many
        self.end = 0

    def keep(self, name: str, data: bytes) -> None:
        """Keep ``data`` as the file ``name`` (a later one of the same name replaces it)."""
        self.file.write(data)
        self.at[name] = (self.end, len(data))
        self.end += len(data)

    def read(self, name: str) -> bytes:
        """The bytes kept as ``name``."""
        start, size = self.at[name]
        self.file.flush()  # what is still in the buffer
        return os.pread(self.file.fileno(), size, start)


def _zip_entries(
    names: set[str], read: Callable[[str], bytes]
) -> Iterator[tuple[zipfile.ZipInfo, bytes]]:
    """Sorted entries of the files ``names`` (their bytes from ``read``), folders included,
    with fixed times and attributes."""
    folders = {name.rsplit("/", depth)[0] + "/" for name in names for depth in (1, 2, 3)}
    folders = {f for f in folders if f.count("/") <= 3 and f.startswith("Periapical Dataset")}
    for name in sorted(folders | names):
        info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
        info.create_system = 3
        if name.endswith("/"):
            info.external_attr = (0o40755 << 16) | 0x10
            yield info, b""
            continue
        info.external_attr = 0o644 << 16
        if name.endswith(".xml"):
            info.compress_type = zipfile.ZIP_DEFLATED
        yield info, read(name)


def _write_atomically(dest: Path, write: Callable[[Path], object]) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp")
    os.close(handle)
    try:
        write(Path(temp))
        os.chmod(temp, 0o644)
        os.replace(temp, dest)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def _plan(seed: int, films: int, all_copies_among_originals: bool) -> Planner:
    # Stems needed: the films, their copies (about 1.2 per film) when every copy is also filed
    # among the originals, the copies planted there anyway and the bad inputs.
    needed = films * (3 if all_copies_among_originals else 1) + 100
    planner = Planner(seed, min(needed, 9999))
    planner.plan_clean(films)
    plan_augmented(planner)
    plan_among_originals(planner)
    if all_copies_among_originals:
        file_every_copy_among_originals(planner)
    plan_bad_inputs(planner)
    plan_held_out_cases(planner)
    plant_visits(planner, seed)
    plan_bordered_original(planner)
    return planner


def _progress(shown: bool) -> Progress:
    """Bars on stderr for the slow parts (drawing the films, writing the zip); none when not
    ``shown`` (the tests and library callers)."""
    return Progress(
        TextColumn("{task.description:<12}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        disable=not shown,
    )


def write_sample_archive(
    dest_zip: Path,
    *,
    seed: int = 0,
    films: int = 200,
    all_copies_among_originals: bool = False,
    progress: bool = False,
) -> SampleTruth:
    """Write the synthetic archive and ``<stem>.truth.json`` next to it; return the truth.

    With ``all_copies_among_originals`` every augmentation-folder copy is also filed among the
    originals under a fresh original stem, so that no copy can be dropped by its name alone.
    ``progress`` shows bars on stderr (a default sample takes about half a minute).
    """
    if films < MIN_FILMS:
        raise PericurateError(
            f"A sample of {films} films is too small: it needs at least {MIN_FILMS} original "
            "films to plant every case."
        )
    dest_zip = Path(dest_zip)
    planner = _plan(seed, films, all_copies_among_originals)
    clean = {film.stem for film in planner.clean}
    reversed_stems, numbered = apply_xml_quirks(
        planner.rng, planner.annotations, clean, planner.patient_numbers
    )

    files = dict(planner.loose_files)
    for name in JUNK_ARCHIVES:
        files[name] = _junk_archive(planner.rng)
    for note in planner.annotations + planner.held_out_notes:
        files[f"{ANNOTS_DIR}/{note.stem}.xml"] = annotation_xml(note)
    jobs = [
        RenderJob(tuple(f.lows), tuple(f.grain_offsets), f.size, tuple(f.outputs), seed)
        for f in planner.families
    ]
    bars = _progress(progress)
    drawing = bars.add_task("draw films", total=len(jobs))

    def write_zip(path: Path, spool: _Spool) -> None:
        names = set(files) | set(spool.at)  # the drawn films win on a name they share

        def read(name: str) -> bytes:
            return spool.read(name) if name in spool.at else files[name]

        writing = bars.add_task("write zip", total=len(names))
        with zipfile.ZipFile(path, "w") as archive:
            archive.comment = SAMPLE_COMMENT.encode()
            for info, data in _zip_entries(names, read):
                archive.writestr(info, data)
                if not info.is_dir():
                    bars.advance(writing)

    dest_zip.parent.mkdir(parents=True, exist_ok=True)
    with bars, tempfile.TemporaryFile(dir=dest_zip.parent) as spooled:
        spool = _Spool(spooled)  # the file is removed when closed
        workers = min(2, os.cpu_count() or 1)
        for rendered in ordered_map(render, jobs, workers=workers, chunksize=4):
            for name, data in rendered.items():
                spool.keep(name, data)
            bars.advance(drawing)
        _write_atomically(dest_zip, lambda path: write_zip(path, spool))
    truth = SampleTruth(
        seed=seed,
        films=films,
        originals=tuple(sorted(clean)),
        film_truth={
            f.stem: FilmTruth(*f.family.size, f.mode, tuple(sorted(f.boxes)), encoders.SYSTEM)
            for f in sorted(planner.clean, key=lambda f: f.stem)
        },
        augmented=tuple(sorted(planner.augmented, key=lambda a: a.stem)),
        augmented_among_originals=tuple(planner.among),
        double_annotated=tuple(planner.doubles),
        lookalike_groups=tuple(planner.groups),
        bad_inputs=tuple(planner.bad),
        junk_archives=JUNK_ARCHIVES,
        reversed_boxes=reversed_stems,
        patient_number_in_filename=numbered,
        distant_visit_groups=tuple(planner.distant),
        patient_groups=planner.patient_groups,
        template_number_films=planner.template,
        all_copies_among_originals=all_copies_among_originals,
        encoders=dict(encoders.SIGNATURES),
        notes=NOTES,
        held_out=tuple(planner.held_out),
        realistic_visits=tuple(planner.revisits),
        shared_label_films=planner.shared_label,
    )
    _write_atomically(truth_path(dest_zip), lambda p: p.write_text(truth.to_json()))
    return truth
