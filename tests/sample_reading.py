"""Reading a sample archive in the tests: a film's annotation, its boxes, its grey pixels and
where the archive files it. Also the two samples the sample tests share (``conftest.py``)."""

from __future__ import annotations

import io
import zipfile
from xml.etree import ElementTree

import numpy as np
from PIL import Image

from curation.sample import ANNOTS_DIR, AUGMENTED_DIR, ORIGINAL_DIR, SampleTruth

SMALL_FILMS = 30  # the small sample: seed 3, enough films for every planted case
SMALL_SEED = 3


def annotation_of(archive: zipfile.ZipFile, stem: str) -> ElementTree.Element:
    return ElementTree.fromstring(archive.read(f"{ANNOTS_DIR}/{stem}.xml"))


def boxes_of(archive: zipfile.ZipFile, stem: str) -> tuple[tuple[int, ...], ...]:
    """The boxes an XML states, corners ordered, sorted."""
    boxes = []
    for obj in annotation_of(archive, stem).iter("object"):
        corners = [int(obj.findtext(f"bndbox/{t}")) for t in ("xmin", "ymin", "xmax", "ymax")]
        x1, x2 = sorted(corners[0::2])
        y1, y2 = sorted(corners[1::2])
        boxes.append((x1, y1, x2, y2, int(obj.findtext("name"))))
    return tuple(sorted(boxes))


def film_grey(archive: zipfile.ZipFile, path: str) -> np.ndarray:
    with Image.open(io.BytesIO(archive.read(path))) as image:
        return np.asarray(image.convert("L"), dtype=np.float32)


def path_of(stem: str, truth: SampleTruth) -> str:
    folder_copies = {copy.stem for copy in truth.augmented}
    return f"{AUGMENTED_DIR if stem in folder_copies else ORIGINAL_DIR}/{stem}.jpg"
