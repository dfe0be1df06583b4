"""A patient's trabecular texture: the fine bone structure a real radiograph carries and a drawn
film, made of smooth shapes, lacks.

A revisit of one patient is found by the bone's own small structure (RootSIFT features that
recur, bent with the jaw, on both films); a drawn film of smooth shapes offers a hundredth of
a real film's features, so its revisits verify far below a real revisit. The texture is a
network of thin bright struts (where a band-passed random field crosses zero, at two scales of
a few film pixels), drawn from the patient's own seed and strongest where the drawing is bone:
it is part of the patient, so every film of the patient and every later visit drawn from them
(``curation.drawing.revisits``) carries it, warped with the jaw, while another patient carries
another. Its scales sit above the revisit's blur and a JPEG's loss, so it survives both.
Figures: docs/design.md, "Visits of one patient".
"""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np

# Band centres (sigma, low-resolution px: four film pixels each) and their weights: the finer
# one is bone's trabeculae, the coarser its marrow spaces.
SCALES = ((1.5, 1.0), (3.0, 0.8))
STRUT_SHARPNESS = 2.0  # how thin a strut is: exp(-k * field^2) of a unit-spread field
AMPLITUDE = 12.0  # grey levels of the texture's spread where the drawing is densest bone
SOFT_TISSUE_SHARE = 0.55  # of the amplitude where the drawing is darkest (soft tissue, air)
BONE_SIGMA = 4.0  # low-resolution px: how smoothly the drawing's brightness says "bone"
BONE_GREYS = (0.15, 0.65)  # of full white: the drawing's (smoothed) soft tissue, its densest bone


def trabecular_field(shape: tuple[int, int], seed: Sequence[int]) -> np.ndarray:
    """The patient's texture before the bone shapes it: zero mean, unit spread."""
    noise = np.random.default_rng(list(seed)).standard_normal(shape).astype(np.float32)
    field = np.zeros(shape, np.float32)
    for sigma, weight in SCALES:
        band = cv2.GaussianBlur(noise, (0, 0), sigma) - cv2.GaussianBlur(noise, (0, 0), 2 * sigma)
        band /= max(float(band.std()), 1e-6)
        struts = np.exp(-STRUT_SHARPNESS * band * band)
        field += weight * (struts - struts.mean())
    field /= max(float(field.std()), 1e-6)
    return field


def with_trabecular_texture(low: np.ndarray, seed: Sequence[int]) -> np.ndarray:
    """The low-resolution film ``low`` (uint8) with its patient's texture (``seed``), scaled
    by how much bone the drawing shows there (its smoothed brightness)."""
    drawing = low.astype(np.float32)
    soft, dense = BONE_GREYS
    brightness = cv2.GaussianBlur(drawing, (0, 0), BONE_SIGMA) / 255.0
    bone = np.clip((brightness - soft) / (dense - soft), 0, 1)
    weight = SOFT_TISSUE_SHARE + (1 - SOFT_TISSUE_SHARE) * bone
    textured = drawing + AMPLITUDE * weight * trabecular_field((low.shape[0], low.shape[1]), seed)
    film: np.ndarray = np.clip(textured + 0.5, 0, 255).astype(np.uint8)
    return film
