"""A synthetic stand-in for the real archive, so the chain and its tests run without the 8.9 GB.

``write_sample_archive`` draws panoramic-looking films procedurally (numpy at quarter
resolution, upscaled), files them in the real archive's layout with its quirks, plants every
case the chain must handle (augmented copies, double-annotated duplicates, look-alike visits,
bad inputs) and writes the ground truth next to the zip as ``<stem>.truth.json``. Everything
follows from the seed: the same seed gives a byte-identical zip. Figures computed on this
sample say nothing about the real data.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import struct
import tempfile
import zipfile
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
from PIL import Image

from curation.hashing import AverageHash512, View, hamming

# The archive comment that marks a sample; builds record it, so no card mistakes it for real.
SAMPLE_COMMENT = "pericurate synthetic sample source: procedurally drawn films, not real data"
ROOT = "Periapical Dataset/Periapical Lesions"
ORIGINAL_DIR = f"{ROOT}/Original JPG Images"
AUGMENTED_DIR = f"{ROOT}/Augmentation JPG Images"
ANNOTS_DIR = f"{ROOT}/Image Annots"
JUNK_ARCHIVES = ("Periapical Dataset/Periapical Lesions.rar", "Periapical Dataset/Annots.rar")

AUGMENT_DIGITS = {"noise": "2", "scaling": "3", "mirror": "4", "rotation": "5"}
LOOKALIKE_RADIUS = 30
ZIP_TIME = (2024, 1, 1, 0, 0, 0)
BOMB_SIZE = (20_000, 12_000)

_LOW_RES = 4
_PAD = 0.05
_ACCEPT_MARGIN = 16
_LOOKALIKE_TARGET = 22
_AUGMENT_RATE = 0.3
_MIN_PER_KIND = 3


@dataclass(frozen=True)
class AugmentedCopy:
    """An augmented film: its stem, the original it was made from, and how."""

    stem: str
    source: str
    kind: str
    detail: str


@dataclass(frozen=True)
class DoubleAnnotated:
    """One radiograph filed under two original stems, each with its own boxes."""

    first: str
    second: str
    encoding: str


@dataclass(frozen=True)
class BadInput:
    """A planted file the chain must reject, with why."""

    path: str
    stem: str
    reason: str


@dataclass(frozen=True)
class FilmTruth:
    """What an original film really is: size, saved mode and its true boxes (pixels, ordered)."""

    width: int
    height: int
    mode: str
    lesions: tuple[tuple[int, int, int, int, int], ...]


@dataclass(frozen=True)
class SampleTruth:
    """Ground truth of a sample archive; never stored inside the zip."""

    seed: int
    films: int
    originals: tuple[str, ...]
    film_truth: dict[str, FilmTruth]
    augmented: tuple[AugmentedCopy, ...]
    augmented_among_originals: tuple[AugmentedCopy, ...]
    double_annotated: tuple[DoubleAnnotated, ...]
    lookalike_groups: tuple[tuple[str, ...], ...]
    bad_inputs: tuple[BadInput, ...]
    junk_archives: tuple[str, ...]
    reversed_boxes: tuple[str, ...]
    patient_number_in_filename: tuple[str, ...]
    notes: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> SampleTruth:
        raw = json.loads(text)
        return cls(
            seed=raw["seed"],
            films=raw["films"],
            originals=tuple(raw["originals"]),
            film_truth={
                stem: FilmTruth(
                    width=f["width"],
                    height=f["height"],
                    mode=f["mode"],
                    lesions=tuple(tuple(lesion) for lesion in f["lesions"]),
                )
                for stem, f in raw["film_truth"].items()
            },
            augmented=tuple(AugmentedCopy(**a) for a in raw["augmented"]),
            augmented_among_originals=tuple(
                AugmentedCopy(**a) for a in raw["augmented_among_originals"]
            ),
            double_annotated=tuple(DoubleAnnotated(**d) for d in raw["double_annotated"]),
            lookalike_groups=tuple(tuple(g) for g in raw["lookalike_groups"]),
            bad_inputs=tuple(BadInput(**b) for b in raw["bad_inputs"]),
            junk_archives=tuple(raw["junk_archives"]),
            reversed_boxes=tuple(raw["reversed_boxes"]),
            patient_number_in_filename=tuple(raw["patient_number_in_filename"]),
            notes=dict(raw["notes"]),
        )


def truth_path(dest_zip: Path) -> Path:
    """Where the truth of ``dest_zip`` lives: ``<stem>.truth.json`` next to it."""
    return dest_zip.with_name(f"{dest_zip.stem}.truth.json")


# --------------------------------------------------------------------------------------------
# Drawing: a patient is a padded quarter-resolution canvas; a shot crops and exposes it.


@dataclass(frozen=True)
class _Lesion:
    x: float
    y: float
    radius: float
    pai: int


@dataclass(frozen=True)
class _Patient:
    canvas: np.ndarray
    lesions: tuple[_Lesion, ...]
    width: int
    height: int

    @property
    def low_size(self) -> tuple[int, int]:
        return -(-self.width // _LOW_RES), -(-self.height // _LOW_RES)

    @property
    def pad(self) -> tuple[int, int]:
        low_w, low_h = self.low_size
        return round(low_w * _PAD), round(low_h * _PAD)


@dataclass(frozen=True)
class _Shot:
    """One exposure of a patient: crop offset (low-res px from centre), gain, bias, gamma."""

    dx: int = 0
    dy: int = 0
    gain: float = 1.0
    bias: float = 0.0
    gamma: float = 1.0


def _smooth_noise(rng: np.random.Generator, shape: tuple[int, int], cells: tuple[int, int]):
    grid = rng.standard_normal((cells[1], cells[0])).astype(np.float32)
    resized = Image.fromarray(grid, mode="F").resize((shape[1], shape[0]), Image.Resampling.BICUBIC)
    return np.asarray(resized)


def _step(x: np.ndarray) -> np.ndarray:
    """A soft 0-to-1 step over about 0.03 of the frame, so no shape has a hard edge."""
    return 1.0 / (1.0 + np.exp(-x / 0.015))


def _draw_patient(rng: np.random.Generator) -> _Patient:
    """Background, skull and spine ghosts, jaw, two arches of teeth, texture and lesions."""
    width = int(rng.integers(2300, 2641))
    height = int(rng.integers(1250, 1301))
    low_w, low_h = -(-width // _LOW_RES), -(-height // _LOW_RES)
    pad_x, pad_y = round(low_w * _PAD), round(low_h * _PAD)
    shape = (low_h + 2 * pad_y, low_w + 2 * pad_x)
    v = ((np.arange(shape[0], dtype=np.float32) - pad_y) / low_h)[:, None]
    u = ((np.arange(shape[1], dtype=np.float32) - pad_x) / low_w)[None, :]

    cx = 0.5 + rng.normal(0, 0.02)
    occlusal = 0.55 + rng.normal(0, 0.03)
    smile = rng.uniform(0.3, 0.7)
    half_span = rng.uniform(0.27, 0.33)
    occl = occlusal - smile * (u - cx) ** 2
    img = np.full(shape, rng.uniform(15, 40), dtype=np.float32)
    img = img + rng.uniform(40, 90) * np.exp(-(((u - 0.5) / 0.5) ** 2) - ((v + 0.05) / 0.4) ** 2)
    for side in (0.04, 0.96):
        spine = np.exp(-(((u - side - rng.normal(0, 0.01)) / 0.035) ** 2))
        img = img + rng.uniform(30, 70) * spine * _step(v - 0.25)
    arch = np.exp(-((np.abs(u - cx) / (half_span + 0.04)) ** 6))
    img = img + rng.uniform(35, 60) * arch * np.exp(-(((v - occl) / 0.22) ** 2))
    jaw = occl + rng.uniform(0.27, 0.33)
    img = img + rng.uniform(60, 100) * arch * np.exp(-(((v - jaw) / 0.05) ** 2))
    for side in (-1, 1):
        ramus_u = cx + side * (half_span + rng.uniform(0.06, 0.1))
        ramus = np.exp(-(((u - ramus_u) / 0.04) ** 2)) * _step(v - 0.2) * _step(occlusal + 0.25 - v)
        img = img + rng.uniform(50, 90) * ramus
        sinus = np.exp(-(((u - cx - side * 0.17) / 0.1) ** 2) - ((v - occlusal + 0.3) / 0.09) ** 2)
        img = img - rng.uniform(15, 40) * sinus
    img = img + rng.uniform(30, 45) * _smooth_noise(
        rng, shape, (int(rng.integers(5, 9)), int(rng.integers(3, 6)))
    )
    img = img + rng.uniform(6, 10) * _smooth_noise(
        rng, shape, (int(rng.integers(14, 22)), int(rng.integers(7, 11)))
    )

    apices = _draw_teeth(rng, img, cx, occlusal, smile, half_span, (pad_x, pad_y, low_w, low_h))
    lesions = _draw_lesions(rng, img, apices)
    return _Patient(canvas=img, lesions=lesions, width=width, height=height)


def _draw_teeth(rng, img, cx, occlusal, smile, half_span, frame) -> list[tuple[float, float]]:
    """Add both arches of teeth in place; return the root apices in canvas pixels."""
    pad_x, pad_y, low_w, low_h = frame
    count = int(rng.integers(13, 17))
    apices = []
    for jaw_sign in (-1, 1):
        for k in range(count):
            if rng.random() < 0.08:
                continue
            tu = cx - half_span + 2 * half_span * (k + 0.5) / count + rng.normal(0, 0.004)
            tv = occlusal - smile * (tu - cx) ** 2
            length = rng.uniform(0.17, 0.23) * low_h
            half_w = 0.42 * 2 * half_span * low_w / count
            tilt = -2 * smile * (tu - cx) * low_w / low_h * 0.5 * jaw_sign
            x0 = pad_x + tu * low_w
            y0 = pad_y + tv * low_h + jaw_sign * 0.01 * low_h
            yc = y0 + jaw_sign * length / 2
            x_lo, x_hi = int(max(x0 - 3 * half_w, 0)), int(min(x0 + 3 * half_w, img.shape[1]))
            y_lo = int(max(yc - length, 0))
            y_hi = int(min(yc + length, img.shape[0]))
            ys, xs = np.mgrid[y_lo:y_hi, x_lo:x_hi].astype(np.float32)
            along = (ys - yc) / (length / 2)
            across = (xs - x0 - tilt * (ys - y0)) / (
                half_w * (1 - 0.45 * (jaw_sign * along + 1) / 2)
            )
            tooth = np.exp(-((along**2 + across**2) ** 3))
            crown = np.exp(-(((ys - y0 - jaw_sign * 0.1 * length) / (0.15 * length)) ** 2))
            img[y_lo:y_hi, x_lo:x_hi] += tooth * (
                rng.uniform(70, 110) + rng.uniform(40, 70) * crown
            )
            apex_y = y0 + jaw_sign * length
            apices.append((x0 + tilt * (apex_y - y0), apex_y))
    return apices


def _draw_lesions(rng, img, apices) -> tuple[_Lesion, ...]:
    """Darken a few round patches at root apices in place; grade grows with size."""
    count = int(rng.choice([0, 1, 1, 2, 2, 3, 4], p=[0.15, 0.2, 0.2, 0.15, 0.15, 0.1, 0.05]))
    chosen = rng.choice(len(apices), size=min(count, len(apices)), replace=False)
    lesions = []
    for index in sorted(chosen):
        pai = int(rng.choice([3, 4, 5]))
        radius = {3: 5.0, 4: 8.0, 5: 12.0}[pai] * rng.uniform(0.8, 1.2)
        ax, ay = apices[index]
        x = ax + rng.normal(0, 1.5)
        y = ay + rng.normal(0, 1.5)
        y_lo, y_hi = int(max(y - 3 * radius, 0)), int(min(y + 3 * radius, img.shape[0]))
        x_lo, x_hi = int(max(x - 3 * radius, 0)), int(min(x + 3 * radius, img.shape[1]))
        ys, xs = np.mgrid[y_lo:y_hi, x_lo:x_hi].astype(np.float32)
        blob = np.exp(-((((xs - x) / radius) ** 2 + ((ys - y) / (0.8 * radius)) ** 2) ** 2))
        img[y_lo:y_hi, x_lo:x_hi] -= rng.uniform(50, 80) * blob
        lesions.append(_Lesion(x=float(x), y=float(y), radius=float(radius), pai=pai))
    return tuple(lesions)


def _expose(patient: _Patient, shot: _Shot) -> np.ndarray:
    """The low-resolution uint8 film of one shot."""
    low_w, low_h = patient.low_size
    pad_x, pad_y = patient.pad
    y0, x0 = pad_y + shot.dy, pad_x + shot.dx
    crop = patient.canvas[y0 : y0 + low_h, x0 : x0 + low_w]
    scaled = np.clip((crop * shot.gain + shot.bias) / 255.0, 0.0, 1.0) ** shot.gamma
    return (scaled * 255.0 + 0.5).astype(np.uint8)


def _boxes(patient: _Patient, shot: _Shot) -> tuple[tuple[int, int, int, int, int], ...]:
    """True boxes of a shot in full-resolution pixels, ordered corners."""
    low_w, low_h = patient.low_size
    pad_x, pad_y = patient.pad
    sx, sy = patient.width / low_w, patient.height / low_h
    boxes = []
    for lesion in patient.lesions:
        x = (lesion.x - pad_x - shot.dx) * sx
        y = (lesion.y - pad_y - shot.dy) * sy
        rx, ry = 1.1 * lesion.radius * sx, 0.9 * lesion.radius * sy
        x1, x2 = max(round(x - rx), 0), min(round(x + rx), patient.width - 1)
        y1, y2 = max(round(y - ry), 0), min(round(y + ry), patient.height - 1)
        if x2 > x1 and y2 > y1:
            boxes.append((x1, y1, x2, y2, lesion.pai))
    return tuple(boxes)


def _low_hashes(low: np.ndarray) -> dict[View, bytes]:
    """Estimated hashes of a shot; halving first matches the eighth-scale draft decode."""
    return AverageHash512().hash_grey_views(Image.fromarray(low).reduce(2))


# --------------------------------------------------------------------------------------------
# Rendering at full size (runs in worker processes): upscale, grain, transform, encode.


@dataclass(frozen=True)
class _Output:
    """One file to render from a family's shot: where it goes and how it is made."""

    arcname: str
    shot: int
    mode: str = "L"
    quality: int = 90
    transform: str = "none"
    param: float = 0.0
    noise_offset: tuple[int, int] = (0, 0)
    encoding: str = "jpeg"
    copy_of: str = ""


@dataclass(frozen=True)
class _RenderJob:
    lows: tuple[np.ndarray, ...]
    grain_offsets: tuple[tuple[int, int], ...]
    size: tuple[int, int]
    outputs: tuple[_Output, ...]
    seed: int


_GRAIN_SIGMA = 1.5
_TILE_SHAPE = (1500, 2900)


@lru_cache(maxsize=2)
def _noise_tile(seed: int) -> np.ndarray:
    """One Gaussian field per seed; films take crops of it, which is cheaper than fresh draws."""
    return np.random.default_rng([seed, 7]).standard_normal(_TILE_SHAPE, dtype=np.float32)


def _with_noise(film: np.ndarray, seed: int, offset: tuple[int, int], sigma: float):
    tile = _noise_tile(seed)
    oy, ox = offset
    noise = tile[oy : oy + film.shape[0], ox : ox + film.shape[1]]
    return np.clip(film + sigma * noise + 0.5, 0, 255).astype(np.uint8)


def _transformed(film: np.ndarray, output: _Output, seed: int) -> np.ndarray:
    if output.transform == "mirror":
        return np.ascontiguousarray(film[:, ::-1])
    if output.transform == "rotation":
        return np.ascontiguousarray(np.rot90(film, k=round(output.param) // 90))
    if output.transform == "noise":
        return _with_noise(film, seed, output.noise_offset, output.param)
    if output.transform == "scaling":
        height, width = film.shape
        size = (round(width * output.param), round(height * output.param))
        return np.asarray(Image.fromarray(film).resize(size, Image.Resampling.BILINEAR))
    return film


def _encode(film: np.ndarray, output: _Output) -> bytes:
    buffer = io.BytesIO()
    if output.encoding == "png16":
        wide = film.astype(np.uint16) * 257
        Image.fromarray(wide).save(buffer, "PNG", compress_level=1)
        return buffer.getvalue()
    image = Image.fromarray(film).convert(output.mode)
    image.save(buffer, "JPEG", quality=output.quality)
    data = buffer.getvalue()
    if output.encoding == "truncated":
        return data[: len(data) * 2 // 5]
    return data


def _render(job: _RenderJob) -> dict[str, bytes]:
    """All files of one family, keyed by archive name."""
    films = [
        _with_noise(
            np.asarray(Image.fromarray(low).resize(job.size, Image.Resampling.BICUBIC)),
            job.seed,
            offset,
            _GRAIN_SIGMA,
        )
        for low, offset in zip(job.lows, job.grain_offsets, strict=True)
    ]
    files: dict[str, bytes] = {}
    for output in job.outputs:
        if output.copy_of:
            files[output.arcname] = files[output.copy_of]
            continue
        files[output.arcname] = _encode(_transformed(films[output.shot], output, job.seed), output)
    return files


# --------------------------------------------------------------------------------------------
# Planning (main process): who is drawn, under which stems, with which annotations.

Box = tuple[int, int, int, int, int]


class _HashBook:
    """Hashes of every accepted patient, so a new one is redrawn if it resembles any of them."""

    def __init__(self) -> None:
        self.identity: list[np.ndarray] = []
        self.views: list[np.ndarray] = []

    @staticmethod
    def _bits(views: dict[View, bytes]) -> np.ndarray:
        return np.unpackbits(np.frombuffer(b"".join(views.values()), np.uint8)).reshape(5, -1)

    def admits(self, lows: list[np.ndarray]) -> bool:
        """True when no shot's view comes near another patient or the shot's own other views."""
        limit = LOOKALIKE_RADIUS + _ACCEPT_MARGIN
        bits = [self._bits(_low_hashes(low)) for low in lows]
        for shot in bits:
            if (shot[0] != shot[1:]).sum(axis=1).min() <= limit:
                return False
            if self.identity:
                known_ids = np.stack(self.identity)
                known_views = np.concatenate(self.views)
                if (known_views != shot[0]).sum(axis=1).min() <= limit:
                    return False
                if (known_ids[:, None, :] != shot[None, :, :]).sum(axis=2).min() <= limit:
                    return False
        self.identity.extend(shot[0] for shot in bits)
        self.views.extend(bits)
        return True


def _lookalike_shots(rng: np.random.Generator, patient: _Patient, size: int) -> list[_Shot]:
    """Visits of one patient: shifted about 1 %, re-exposed; shrunk until within the radius."""
    base = _Shot(gain=rng.uniform(0.9, 1.1), bias=rng.uniform(-8, 8))
    shots = [base]
    for _ in range(size - 1):
        scale = 1.0
        while True:
            shot = _Shot(
                dx=round(scale * rng.choice([-1, 1]) * rng.uniform(4, 8)),
                dy=round(scale * rng.choice([-1, 1]) * rng.uniform(2, 5)),
                gain=rng.uniform(0.85, 1.15),
                bias=rng.choice([-1, 1]) * rng.uniform(10, 20),
                gamma=rng.uniform(0.9, 1.1),
            )
            lows = [_low_hashes(_expose(patient, s))[View.identity] for s in [*shots, shot]]
            if max(hamming(lows[-1], h) for h in lows[:-1]) <= _LOOKALIKE_TARGET or scale < 0.3:
                break
            scale *= 0.7
        shots.append(shot)
    return shots


def _mirror_box(box: Box, width: int, height: int) -> Box:
    x1, y1, x2, y2, pai = box
    return (width - 1 - x2, y1, width - 1 - x1, y2, pai)


def _rotate_box(box: Box, width: int, height: int, angle: int) -> Box:
    """Box after a clockwise turn by ``-angle`` degrees (``angle`` is -90 or -180)."""
    x1, y1, x2, y2, pai = box
    if angle == -90:
        return (height - 1 - y2, x1, height - 1 - y1, x2, pai)
    return (width - 1 - x2, height - 1 - y2, width - 1 - x1, height - 1 - y1, pai)


def _scale_box(box: Box, factor: float) -> Box:
    x1, y1, x2, y2, pai = box
    return (round(x1 * factor), round(y1 * factor), round(x2 * factor), round(y2 * factor), pai)


def _jitter(rng: np.random.Generator, boxes: tuple[Box, ...], width: int, height: int):
    """An independent annotator's boxes: every corner moved by up to 8 px."""
    moved = []
    for x1, y1, x2, y2, pai in boxes:
        dx1, dy1, dx2, dy2 = (int(d) for d in rng.integers(-8, 9, size=4))
        moved.append(
            (
                max(x1 + dx1, 0),
                max(y1 + dy1, 0),
                min(x2 + dx2, width - 1),
                min(y2 + dy2, height - 1),
                pai,
            )
        )
    return tuple(moved)


def _disagree(rng: np.random.Generator, boxes: tuple[Box, ...]) -> tuple[Box, ...]:
    """A second reader who grades one lesion a step differently and, of several, misses one,
    so the agreement figure of the sample is not trivially perfect."""
    if not boxes:
        return boxes
    regraded = list(boxes)
    x1, y1, x2, y2, pai = regraded[0]
    regraded[0] = (x1, y1, x2, y2, 4 if pai != 4 else int(rng.choice([3, 5])))
    if len(regraded) > 1:
        regraded.pop(int(rng.integers(1, len(regraded))))
    return tuple(regraded)


@dataclass
class _Annotation:
    """One VOC file to write; coordinates are strings so bad values can be planted."""

    stem: str
    folder: str
    width: int
    height: int
    depth: int
    objects: list[tuple[str, str, str, str, str]]
    filename: str = ""
    malformed: bool = False


def _annotation_xml(note: _Annotation) -> bytes:
    root = ElementTree.Element("annotation")
    ElementTree.SubElement(root, "folder").text = note.folder
    ElementTree.SubElement(root, "filename").text = note.filename
    ElementTree.SubElement(root, "path").text = f"D:\\periapical\\{note.folder}\\{note.filename}"
    source = ElementTree.SubElement(root, "source")
    ElementTree.SubElement(source, "database").text = "Unknown"
    size = ElementTree.SubElement(root, "size")
    for tag, value in (("width", note.width), ("height", note.height), ("depth", note.depth)):
        ElementTree.SubElement(size, tag).text = str(value)
    ElementTree.SubElement(root, "segmented").text = "0"
    for name, *corners in note.objects:
        obj = ElementTree.SubElement(root, "object")
        ElementTree.SubElement(obj, "name").text = name
        ElementTree.SubElement(obj, "pose").text = "Unspecified"
        ElementTree.SubElement(obj, "truncated").text = "0"
        ElementTree.SubElement(obj, "difficult").text = "0"
        box = ElementTree.SubElement(obj, "bndbox")
        for tag, value in zip(("xmin", "ymin", "xmax", "ymax"), corners, strict=True):
            ElementTree.SubElement(box, tag).text = value
    ElementTree.indent(root, space="\t")
    text = ElementTree.tostring(root, encoding="unicode") + "\n"
    if note.malformed:
        text = text[: len(text) // 2]
    return text.encode("utf-8")


def _objects(boxes: tuple[Box, ...]) -> list[tuple[str, str, str, str, str]]:
    return [(str(pai), str(x1), str(y1), str(x2), str(y2)) for x1, y1, x2, y2, pai in boxes]


@dataclass
class _Family:
    """Every file drawn from one patient; frozen into a ``_RenderJob`` at the end."""

    lows: list[np.ndarray]
    grain_offsets: list[tuple[int, int]]
    size: tuple[int, int]
    outputs: list[_Output]


@dataclass
class _Film:
    """A clean original as planned: where its pixels come from and what its XML states."""

    stem: str
    family: _Family
    shot: int
    mode: str
    quality: int
    boxes: tuple[Box, ...]


class _Planner:
    """Draws every patient and decides every file; the drawing order fixes the whole archive."""

    def __init__(self, seed: int, films: int) -> None:
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.book = _HashBook()
        self.prefixes = iter(self._prefix_pool(films + 64))
        self.families: list[_Family] = []
        self.annotations: list[_Annotation] = []
        self.loose_files: dict[str, bytes] = {}
        self.clean: list[_Film] = []
        self.augmented: list[AugmentedCopy] = []
        self.among: list[AugmentedCopy] = []
        self.doubles: list[DoubleAnnotated] = []
        self.groups: list[tuple[str, ...]] = []
        self.bad: list[BadInput] = []

    def _prefix_pool(self, count: int) -> list[str]:
        """Unique stem prefixes: four digits (5-digit stems) or a zero and four (6-digit)."""
        pool: set[str] = set()
        while len(pool) < count:
            number = int(self.rng.integers(1, 10_000))
            pool.add(f"{number:04d}" if self.rng.random() < 0.65 else f"0{number:04d}")
        ordered = sorted(pool)
        self.rng.shuffle(ordered)
        return ordered

    def _grain(self) -> tuple[int, int]:
        return int(self.rng.integers(0, 150)), int(self.rng.integers(0, 200))

    def _mode(self) -> str:
        return str(self.rng.choice(["L", "RGB"]))

    def _quality(self) -> int:
        return int(self.rng.integers(75, 89))

    def _patient(self, visits: int = 1) -> tuple[_Patient, list[_Shot], _Family]:
        """A patient unlike every earlier one (in every view), with ``visits`` shots."""
        while True:
            patient = _draw_patient(self.rng)
            if visits == 1:
                shots = [_Shot(gain=self.rng.uniform(0.9, 1.1), bias=self.rng.uniform(-8, 8))]
            else:
                shots = _lookalike_shots(self.rng, patient, visits)
            lows = [_expose(patient, shot) for shot in shots]
            if self.book.admits(lows):
                break
        family = _Family(
            lows=lows,
            grain_offsets=[self._grain() for _ in shots],
            size=(patient.width, patient.height),
            outputs=[],
        )
        self.families.append(family)
        return patient, shots, family

    def _original(self, family: _Family, shot: int, boxes: tuple[Box, ...], **kw) -> _Film:
        stem = next(self.prefixes) + "1"
        film = _Film(stem, family, shot, kw.pop("mode", self._mode()), self._quality(), boxes)
        width, height = family.size
        family.outputs.append(
            _Output(f"{ORIGINAL_DIR}/{stem}.jpg", shot, film.mode, film.quality, **kw)
        )
        self.annotations.append(
            _Annotation(stem, "Original JPG Images", width, height, 3, _objects(boxes))
        )
        return film

    def plan_clean(self, films: int) -> None:
        doubles = max(2, films // 20)
        group_sizes = [int(self.rng.integers(2, 5)) for _ in range(max(2, films // 30))]
        singles = films - 2 * doubles - sum(group_sizes)
        for _ in range(singles):
            patient, shots, family = self._patient()
            self.clean.append(self._original(family, 0, _boxes(patient, shots[0])))
        for index in range(doubles):
            patient, shots, family = self._patient()
            width, height = family.size
            truth_boxes = _boxes(patient, shots[0])
            first = self._original(family, 0, _jitter(self.rng, truth_boxes, width, height))
            encoding = "identical" if index % 2 == 0 else "reencoded"
            second_stem = next(self.prefixes) + "1"
            arcname = f"{ORIGINAL_DIR}/{second_stem}.jpg"
            if encoding == "identical":
                output = _Output(arcname, 0, copy_of=f"{ORIGINAL_DIR}/{first.stem}.jpg")
                second = _Film(second_stem, family, 0, first.mode, first.quality, ())
            else:
                quality = first.quality + int(self.rng.integers(6, 12))
                output = _Output(arcname, 0, first.mode, quality)
                second = _Film(second_stem, family, 0, first.mode, quality, ())
            second_opinion = _disagree(self.rng, truth_boxes) if index % 3 == 1 else truth_boxes
            second = dataclasses.replace(
                second, boxes=_jitter(self.rng, second_opinion, width, height)
            )
            family.outputs.append(output)
            self.annotations.append(
                _Annotation(
                    second_stem, "Original JPG Images", width, height, 3, _objects(second.boxes)
                )
            )
            self.clean.extend([first, second])
            self.doubles.append(DoubleAnnotated(first.stem, second_stem, encoding))
        for size in group_sizes:
            patient, shots, family = self._patient(visits=size)
            members = [
                self._original(family, i, _boxes(patient, shot)) for i, shot in enumerate(shots)
            ]
            self.clean.extend(members)
            self.groups.append(tuple(m.stem for m in members))

    def _augment(self, film: _Film, kind: str, stem: str, folder: str) -> AugmentedCopy:
        """Add one augmented copy of ``film`` (file and XML) and say what was done."""
        width, height = film.family.size
        boxes = film.boxes
        out_w, out_h = width, height
        kw: dict = {}
        if kind == "noise":
            sigma = round(float(self.rng.uniform(4, 7)), 2)
            kw = {"param": sigma, "noise_offset": self._grain()}
            detail = f"gaussian sigma={sigma}"
        elif kind == "scaling":
            factor = round(float(self.rng.choice([-1, 1]) * self.rng.uniform(0.1, 0.2) + 1), 2)
            kw = {"param": factor}
            out_w, out_h = round(width * factor), round(height * factor)
            boxes = tuple(_scale_box(box, factor) for box in boxes)
            detail = f"factor={factor}"
        elif kind == "mirror":
            boxes = tuple(_mirror_box(box, width, height) for box in boxes)
            detail = "horizontal"
        else:
            angle = -90 if folder == ORIGINAL_DIR else int(self.rng.choice([-90, -180]))
            kw = {"param": float(angle)}
            boxes = tuple(_rotate_box(box, width, height, angle) for box in boxes)
            detail = f"angle={angle}"
        film.family.outputs.append(
            _Output(f"{folder}/{stem}.jpg", film.shot, film.mode, film.quality, kind, **kw)
        )
        xml_folder = folder.rsplit("/", 1)[-1]
        self.annotations.append(_Annotation(stem, xml_folder, out_w, out_h, 3, _objects(boxes)))
        return AugmentedCopy(stem=stem, source=film.stem, kind=kind, detail=detail)

    def plan_augmented(self) -> None:
        kinds_of = {
            film.stem: [k for k in AUGMENT_DIGITS if self.rng.random() < _AUGMENT_RATE]
            for film in self.clean
        }
        for kind in AUGMENT_DIGITS:
            lacking = [stem for stem, kinds in kinds_of.items() if kind not in kinds]
            shortfall = _MIN_PER_KIND - (len(kinds_of) - len(lacking))
            for stem in lacking[: max(shortfall, 0)]:
                kinds_of[stem].append(kind)
        for film in self.clean:
            for kind in AUGMENT_DIGITS:
                if kind in kinds_of[film.stem]:
                    stem = film.stem[:-1] + AUGMENT_DIGITS[kind]
                    self.augmented.append(self._augment(film, kind, stem, AUGMENTED_DIR))

    def plan_among_originals(self) -> None:
        grouped = {stem for group in self.groups for stem in group}
        doubled = {stem for pair in self.doubles for stem in (pair.first, pair.second)}
        sources = [f for f in self.clean if f.stem not in grouped | doubled]
        step = max(1, len(sources) // len(AUGMENT_DIGITS))
        for film, kind in zip(sources[::step], AUGMENT_DIGITS, strict=False):
            stem = next(self.prefixes) + "1"
            self.among.append(self._augment(film, kind, stem, ORIGINAL_DIR))

    def _bad_film(self, reason: str, *, xml: bool = True, **output) -> tuple[str, _Film]:
        """A fresh patient filed as an original that the chain must reject for ``reason``."""
        patient, shots, family = self._patient()
        boxes = _boxes(patient, shots[0]) or ((100, 200, 180, 260, 4),)
        film = self._original(family, 0, boxes, **output)
        if not xml:
            self.annotations.pop()
        self.bad.append(BadInput(f"{ORIGINAL_DIR}/{film.stem}.jpg", film.stem, reason))
        return film.stem, film

    def _bad_annotation(self, reason: str, **changes) -> None:
        stem, _ = self._bad_film(reason)
        note = self.annotations[-1]
        for key, value in changes.items():
            setattr(note, key, value)
        self.bad[-1] = BadInput(f"{ANNOTS_DIR}/{stem}.xml", stem, reason)

    def plan_bad_inputs(self) -> None:
        stem = next(self.prefixes) + "1"
        self.annotations.append(
            _Annotation(stem, "Original JPG Images", 2400, 1280, 3, _objects(((9, 9, 60, 60, 3),)))
        )
        self.bad.append(BadInput(f"{ANNOTS_DIR}/{stem}.xml", stem, "annotation without image"))
        self._bad_film("image without annotation", xml=False)
        self._bad_film("truncated JPEG", encoding="truncated")
        self._bad_film("CMYK JPEG", mode="CMYK")
        self._bad_film(
            "16-bit grayscale (png data, mode I;16, under a .jpg name)", encoding="png16"
        )
        stem = next(self.prefixes) + "1"
        self.loose_files[f"{ORIGINAL_DIR}/{stem}.jpg"] = b"<html><body>Not found</body></html>\n"
        self.annotations.append(
            _Annotation(stem, "Original JPG Images", 2400, 1280, 3, _objects(((9, 9, 60, 60, 3),)))
        )
        self.bad.append(BadInput(f"{ORIGINAL_DIR}/{stem}.jpg", stem, "not an image"))
        stem = next(self.prefixes) + "1"
        self.loose_files[f"{ORIGINAL_DIR}/{stem}.jpg"] = _bomb_jpeg()
        self.annotations.append(
            _Annotation(stem, "Original JPG Images", *BOMB_SIZE, 3, _objects(((9, 9, 60, 60, 3),)))
        )
        self.bad.append(
            BadInput(
                f"{ORIGINAL_DIR}/{stem}.jpg", stem, "decompression bomb (header claims 240 MP)"
            )
        )
        self._bad_annotation("malformed XML", malformed=True)
        self._bad_annotation("unknown grade '7'", objects=[("7", "300", "400", "380", "470")])
        self._bad_annotation(
            "unknown grade 'lesion'", objects=[("lesion", "300", "400", "380", "470")]
        )
        self._bad_annotation("NaN coordinate", objects=[("4", "NaN", "400", "380", "470")])
        self._bad_annotation("negative coordinate", objects=[("3", "300", "-14", "380", "470")])
        self._bad_annotation(
            "degenerate (zero-area) box", objects=[("5", "300", "400", "300", "470")]
        )
        stem, film = self._bad_film("duplicate stem (same stem, .jpg and .JPG)")
        film.family.outputs.append(
            _Output(f"{ORIGINAL_DIR}/{stem}.JPG", 0, film.mode, film.quality + 5)
        )
        self.bad.append(BadInput(f"{ORIGINAL_DIR}/{stem}.JPG", stem, self.bad[-1].reason))
        stem, film = self._bad_film("duplicate stem (same stem in two folders)")
        film.family.outputs.append(_Output(f"{AUGMENTED_DIR}/{stem}.jpg", 0, film.mode, 70))
        self.bad.append(BadInput(f"{AUGMENTED_DIR}/{stem}.jpg", stem, self.bad[-1].reason))


def _bomb_jpeg() -> bytes:
    """A 16 x 16 JPEG whose frame header claims ``BOMB_SIZE``: a tiny file, a huge image."""
    buffer = io.BytesIO()
    Image.new("L", (16, 16), 90).save(buffer, "JPEG", quality=75)
    data = bytearray(buffer.getvalue())
    frame = data.index(b"\xff\xc0")
    width, height = BOMB_SIZE
    data[frame + 5 : frame + 9] = struct.pack(">HH", height, width)
    return bytes(data)


def _apply_xml_quirks(planner: _Planner) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Unreliable ``<filename>`` (some with a patient number) and reversed x corners."""
    rng = planner.rng
    clean = {film.stem for film in planner.clean}
    reversed_stems, numbered = [], []
    for note in planner.annotations:
        draw = rng.random()
        if draw < 0.12:
            note.filename = f"PN{int(rng.integers(1_000_000, 10_000_000))} pano.jpg"
            numbered.append(note.stem)
        elif draw < 0.22:
            note.filename = f"image ({int(rng.integers(1, 5000))}).jpg"
        else:
            note.filename = f"{note.stem}.jpg"
        eligible = note.stem in clean and note.objects and note.folder == "Original JPG Images"
        if eligible and (rng.random() < 0.1 or len(reversed_stems) < 2):
            name, x1, y1, x2, y2 = note.objects[0]
            note.objects[0] = (name, x2, y1, x1, y2)
            reversed_stems.append(note.stem)
    return tuple(sorted(set(reversed_stems))), tuple(sorted(set(numbered)))


def _junk_archive(rng: np.random.Generator) -> bytes:
    return b"Rar!\x1a\x07\x00" + rng.integers(0, 256, size=2048, dtype=np.uint8).tobytes()


def _zip_entries(files: dict[str, bytes]) -> Iterator[tuple[zipfile.ZipInfo, bytes]]:
    """Sorted entries, folders included, with fixed times and attributes."""
    folders = {name.rsplit("/", depth)[0] + "/" for name in files for depth in (1, 2, 3)}
    folders = {f for f in folders if f.count("/") <= 3 and f.startswith("Periapical Dataset")}
    for name in sorted(folders | set(files)):
        info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
        info.create_system = 3
        if name.endswith("/"):
            info.external_attr = (0o40755 << 16) | 0x10
            yield info, b""
            continue
        info.external_attr = 0o644 << 16
        if name.endswith(".xml"):
            info.compress_type = zipfile.ZIP_DEFLATED
        yield info, files[name]


def _write_atomically(dest: Path, write) -> None:
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


def write_sample_archive(dest_zip: Path, *, seed: int = 0, films: int = 200) -> SampleTruth:
    """Write the synthetic archive and ``<stem>.truth.json`` next to it; return the truth."""
    if films < 30:
        raise ValueError(f"films must be at least 30 to plant every case, got {films}")
    dest_zip = Path(dest_zip)
    planner = _Planner(seed, films)
    planner.plan_clean(films)
    planner.plan_augmented()
    planner.plan_among_originals()
    planner.plan_bad_inputs()
    reversed_stems, numbered = _apply_xml_quirks(planner)

    files = dict(planner.loose_files)
    for name in JUNK_ARCHIVES:
        files[name] = _junk_archive(planner.rng)
    for note in planner.annotations:
        files[f"{ANNOTS_DIR}/{note.stem}.xml"] = _annotation_xml(note)
    jobs = [
        _RenderJob(
            lows=tuple(f.lows),
            grain_offsets=tuple(f.grain_offsets),
            size=f.size,
            outputs=tuple(f.outputs),
            seed=seed,
        )
        for f in planner.families
    ]
    with ProcessPoolExecutor(max_workers=min(2, os.cpu_count() or 1)) as pool:
        for rendered in pool.map(_render, jobs, chunksize=4):
            files.update(rendered)

    def write_zip(path: Path) -> None:
        with zipfile.ZipFile(path, "w") as archive:
            archive.comment = SAMPLE_COMMENT.encode()
            for info, data in _zip_entries(files):
                archive.writestr(info, data)

    _write_atomically(dest_zip, write_zip)
    truth = SampleTruth(
        seed=seed,
        films=films,
        originals=tuple(sorted(f.stem for f in planner.clean)),
        film_truth={
            f.stem: FilmTruth(*f.family.size, f.mode, tuple(sorted(f.boxes)))
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
        notes=_NOTES,
    )
    _write_atomically(truth_path(dest_zip), lambda p: p.write_text(truth.to_json()))
    return truth


_NOTES = {
    "boxes": "film_truth boxes are pixel corners as annotated in each XML, corners ordered",
    "rotation": "angle -90 turns the film clockwise; XML width/height stay the original's",
    "sixteen_bit": "png data in mode I;16 under a .jpg name",
    "bomb": "16 x 16 JPEG whose SOF0 header claims 20000 x 12000; Pillow refuses it on open",
    "lookalikes": "visits shifted about 1 % and re-exposed; every pair within Hamming 30",
    "sample": "synthetic: figures computed on it say nothing about the real data",
}
