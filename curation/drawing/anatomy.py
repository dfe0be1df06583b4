"""Drawing a patient: a padded quarter-resolution canvas of jaw, teeth and lesions, and the
shots (exposures) taken of it. Nothing here looks at how films hash: distances between films
fall where the anatomy's variety puts them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

import cv2
import numpy as np
from PIL import Image

from curation.drawing.sizes import HEIGHT_RANGE, WIDTH_RANGE, Box

LOW_RES = 4
_PAD = 0.06
# Coarse soft-tissue pattern: cells (rows, columns), amplitude (grey levels), how many shared
# looks and how much of a patient's pattern comes from its look. Tuned so distinct films'
# distances spread like the real archive's (measured after the fact, never filtered).
LOOK_CELLS = (4, 7)
LOOKS = 4
LOOK_SHARE = (0.5, 0.95)
COARSE_AMPLITUDE = (22.0, 30.0)


@dataclass(frozen=True)
class Lesion:
    """A lesion drawn on the canvas: its centre, radius and grade."""

    x: float
    y: float
    radius: float
    pai: int


@dataclass(frozen=True)
class Patient:
    """A patient's drawn canvas, its lesions and the size of the films taken of it."""

    canvas: np.ndarray
    lesions: tuple[Lesion, ...]
    width: int
    height: int

    @property
    def low_size(self) -> tuple[int, int]:
        """The film's size at the canvas's quarter resolution, rounded up."""
        return -(-self.width // LOW_RES), -(-self.height // LOW_RES)

    @property
    def pad(self) -> tuple[int, int]:
        """The canvas's padding on each side, so a shot can move without leaving it."""
        low_w, low_h = self.low_size
        return round(low_w * _PAD), round(low_h * _PAD)


@dataclass(frozen=True)
class Shot:
    """One exposure of a patient: crop offset (low-res px from centre), gain, bias, gamma;
    for a later visit also how the patient stood (``scale``, ``turn`` in degrees, ``bend``:
    the arch's curve, a share of the height) and a new filling (``filling``: its centre as
    shares of the frame, empty for none)."""

    dx: int = 0
    dy: int = 0
    gain: float = 1.0
    bias: float = 0.0
    gamma: float = 1.0
    scale: float = 1.0
    turn: float = 0.0
    bend: float = 0.0
    trough: float = 0.0  # the front teeth widened (+) or narrowed (-), a share of the width
    filling: tuple[float, ...] = ()  # () or (x, y) shares of the frame

    def forward(self, x: float, y: float, size: tuple[int, int]) -> tuple[float, float]:
        """Where the point (x, y) of the unmoved frame (pixels of a ``size`` frame) lands."""
        width, height = size
        moved = cv2.getRotationMatrix2D((width / 2, height / 2), self.turn, self.scale)
        ax, ay = moved @ np.array([x, y, 1.0])
        bent = ay + self.bend * height * np.sin(np.pi * ax / width)
        return float(ax + self.trough * width * np.sin(2 * np.pi * ax / width)), float(bent)


def _positioned(film: np.ndarray, shot: Shot) -> np.ndarray:
    """A later visit's frame: turned and scaled about the centre, the arch bent (a smooth
    non-rigid warp), and a new filling drawn on a tooth (a bright blob)."""
    if (shot.scale, shot.turn, shot.bend, shot.trough, shot.filling) == (1, 0, 0, 0, ()):
        return film
    height, width = film.shape
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float32)
    inverse = cv2.invertAffineTransform(
        cv2.getRotationMatrix2D((width / 2, height / 2), shot.turn, shot.scale)
    )
    # The inverse of the small horizontal and vertical warps, to first order.
    unwarped = xs - shot.trough * width * np.sin(2 * np.pi * xs / width)
    unbent = ys - shot.bend * height * np.sin(np.pi * unwarped / width)
    map_x = inverse[0, 0] * unwarped + inverse[0, 1] * unbent + inverse[0, 2]
    map_y = inverse[1, 0] * unwarped + inverse[1, 1] * unbent + inverse[1, 2]
    moved = cv2.remap(
        film, map_x.astype(np.float32), map_y.astype(np.float32), cv2.INTER_LINEAR,
        borderMode=cv2.BORDER_REFLECT,
    )  # fmt: skip
    if shot.filling:
        centre = (round(shot.filling[0] * width), round(shot.filling[1] * height))
        axes = (max(2, width // 50), max(2, height // 25))
        cv2.ellipse(moved, centre, axes, 0, 0, 360, 245, -1)
    return moved


def _smooth(grid: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """A coarse grid of values upscaled smoothly to ``shape``."""
    resized = Image.fromarray(grid, mode="F").resize((shape[1], shape[0]), Image.Resampling.BICUBIC)
    return np.asarray(resized)


def _smooth_noise(
    rng: np.random.Generator, shape: tuple[int, int], cells: tuple[int, int]
) -> np.ndarray:
    return _smooth(rng.standard_normal((cells[1], cells[0])).astype(np.float32), shape)


def draw_looks(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """A few shared "looks" (machine, positioning habit, build) of the coarse soft-tissue and
    exposure pattern; patients lean on one, so some unrelated films resemble each other more
    than others, as in a real clinic's archive."""
    return tuple(rng.standard_normal(LOOK_CELLS).astype(np.float32) for _ in range(LOOKS))


def _step(x: np.ndarray) -> np.ndarray:
    """A soft 0-to-1 step over about 0.03 of the frame, so no shape has a hard edge."""
    return 1.0 / (1.0 + np.exp(-x / 0.015))


def draw_patient(rng: np.random.Generator, looks: tuple[np.ndarray, ...]) -> Patient:
    """Background, skull and spine ghosts, jaw, two arches of teeth, texture and lesions."""
    width = int(rng.integers(WIDTH_RANGE[0], WIDTH_RANGE[1] + 1))
    height = int(rng.integers(HEIGHT_RANGE[0], HEIGHT_RANGE[1] + 1))
    low_w, low_h = -(-width // LOW_RES), -(-height // LOW_RES)
    pad_x, pad_y = round(low_w * _PAD), round(low_h * _PAD)
    shape = (low_h + 2 * pad_y, low_w + 2 * pad_x)
    v = ((np.arange(shape[0], dtype=np.float32) - pad_y) / low_h)[:, None]
    u = ((np.arange(shape[1], dtype=np.float32) - pad_x) / low_w)[None, :]

    cx = 0.5 + rng.normal(0, 0.02)
    occlusal = 0.55 + rng.normal(0, 0.03)
    smile = rng.uniform(0.3, 0.7)
    half_span = rng.uniform(0.27, 0.33)
    occl = occlusal - smile * (u - cx) ** 2
    # float32 throughout at run time (Python floats are weak scalars), which numpy's stubs
    # type as float64: the canvas is held as a plain array, as ``Patient`` holds it.
    img: np.ndarray = np.full(shape, rng.uniform(15, 40), dtype=np.float32)
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
    look = looks[int(rng.integers(len(looks)))]
    share = rng.uniform(*LOOK_SHARE)
    coarse = np.sqrt(share) * look + np.sqrt(1 - share) * rng.standard_normal(LOOK_CELLS)
    img = img + rng.uniform(*COARSE_AMPLITUDE) * _smooth(coarse.astype(np.float32), shape)
    img = img + rng.uniform(6, 10) * _smooth_noise(
        rng, shape, (int(rng.integers(14, 22)), int(rng.integers(7, 11)))
    )

    apices = _draw_teeth(rng, img, cx, occlusal, smile, half_span, (pad_x, pad_y, low_w, low_h))
    lesions = _draw_lesions(rng, img, apices)
    return Patient(canvas=img, lesions=lesions, width=width, height=height)


def _draw_teeth(
    rng: np.random.Generator,
    img: np.ndarray,
    cx: float,
    occlusal: float,
    smile: float,
    half_span: float,
    frame: tuple[int, int, int, int],
) -> list[tuple[float, float]]:
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


def _draw_lesions(
    rng: np.random.Generator, img: np.ndarray, apices: list[tuple[float, float]]
) -> tuple[Lesion, ...]:
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
        lesions.append(Lesion(x=float(x), y=float(y), radius=float(radius), pai=pai))
    return tuple(lesions)


def expose(patient: Patient, shot: Shot) -> np.ndarray:
    """The low-resolution uint8 film of one shot."""
    low_w, low_h = patient.low_size
    pad_x, pad_y = patient.pad
    y0, x0 = pad_y + shot.dy, pad_x + shot.dx
    crop = patient.canvas[y0 : y0 + low_h, x0 : x0 + low_w]
    scaled = np.clip((crop * shot.gain + shot.bias) / 255.0, 0.0, 1.0) ** shot.gamma
    return _positioned((scaled * 255.0 + 0.5).astype(np.uint8), shot)


def boxes_of(patient: Patient, shot: Shot) -> tuple[Box, ...]:
    """True boxes of a shot in full-resolution pixels, ordered corners."""
    low_w, low_h = patient.low_size
    pad_x, pad_y = patient.pad
    sx, sy = patient.width / low_w, patient.height / low_h
    boxes = []
    for lesion in patient.lesions:
        lx, ly = shot.forward(
            lesion.x - pad_x - shot.dx, lesion.y - pad_y - shot.dy, (low_w, low_h)
        )
        x, y = lx * sx, ly * sy
        rx, ry = 1.1 * lesion.radius * sx * shot.scale, 0.9 * lesion.radius * sy * shot.scale
        x1, x2 = max(round(x - rx), 0), min(round(x + rx), patient.width - 1)
        y1, y2 = max(round(y - ry), 0), min(round(y + ry), patient.height - 1)
        if x2 > x1 and y2 > y1:
            boxes.append((x1, y1, x2, y2, lesion.pai))
    return tuple(boxes)


def single_shot(rng: np.random.Generator) -> Shot:
    """The one exposure of a patient filed once."""
    return Shot(gain=rng.uniform(0.9, 1.1), bias=rng.uniform(-8, 8))


class _Pose(TypedDict):
    """The fields of ``Shot`` a later visit sets besides its framing and exposure."""

    scale: float
    turn: float
    bend: float
    trough: float
    filling: tuple[float, ...]


def _visit_pose(rng: np.random.Generator, strength: float) -> _Pose:
    """How a patient stands at a later visit, at ``strength`` (1 for visits close in time,
    0.3 for visits years apart, whose soft tissue changes too): scale, a small turn, the
    arch's bend and the front teeth's width (non-rigid), and a new filling. Drawn from a
    child generator, so the rest of the sample is drawn as before."""
    child = rng.spawn(1)[0]
    sign = child.choice([-1, 1], 4)
    return {
        "scale": float(1 + sign[0] * child.uniform(0.003, 0.015) * strength),
        "turn": float(sign[1] * child.uniform(0.2, 1.0) * strength),
        "bend": float(sign[2] * child.uniform(0.006, 0.012) * strength),
        "trough": float(sign[3] * child.uniform(0.004, 0.008) * strength),
        "filling": (float(child.uniform(0.3, 0.7)), float(child.uniform(0.45, 0.6))),
    }


def lookalike_shots(rng: np.random.Generator, visits: int) -> list[Shot]:
    """Visits close in time: shifted about 1 %, re-exposed, repositioned (``_visit_pose``) and
    with a new filling (never shrunk to any radius). Two
    exposures of a patient are never framed to the same few pixels: each visit is at least
    two low-resolution pixels (8 film pixels) from every earlier one, else it would be one
    picture re-exposed, not another film."""
    shots = [single_shot(rng)]
    while len(shots) < visits:
        dx = round(rng.choice([-1, 1]) * rng.uniform(4, 8))
        dy = round(rng.choice([-1, 1]) * rng.uniform(2, 5))
        if any(max(abs(dx - s.dx), abs(dy - s.dy)) < 2 for s in shots):
            continue
        shots.append(
            Shot(
                dx=dx,
                dy=dy,
                gain=rng.uniform(0.85, 1.15),
                bias=rng.choice([-1, 1]) * rng.uniform(10, 20),
                gamma=rng.uniform(0.9, 1.1),
                **_visit_pose(rng, 1.0),
            )
        )
    return shots


def distant_shots(rng: np.random.Generator, visits: int) -> list[Shot]:
    """Visits years apart: shifted up to 3 % of the frame, repositioned further
    (``_visit_pose``), exposed differently, with a new filling; ``changed_soft_tissue`` then
    alters each later visit's soft tissue."""
    shots = [single_shot(rng)]
    for _ in range(visits - 1):
        shots.append(
            Shot(
                dx=round(rng.choice([-1, 1]) * rng.uniform(8, 16)),
                dy=round(rng.choice([-1, 1]) * rng.uniform(4, 8)),
                gain=rng.uniform(0.8, 1.2),
                bias=rng.choice([-1, 1]) * rng.uniform(10, 25),
                gamma=rng.uniform(0.85, 1.15),
                **_visit_pose(rng, 0.3),
            )
        )
    return shots


def changed_soft_tissue(rng: np.random.Generator, low: np.ndarray) -> np.ndarray:
    """A later visit's film: the same bone under different soft tissue and airway shadows."""
    cells = (int(rng.integers(5, 9)), int(rng.integers(3, 6)))
    change = rng.uniform(10, 18) * _smooth_noise(rng, low.shape, cells)
    return np.clip(low + change + 0.5, 0, 255).astype(np.uint8)
