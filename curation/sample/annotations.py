"""The VOC XML files: what each states, how it is written, and the archive's XML quirks
(an unreliable ``<filename>``, patient numbers in it, reversed x corners)."""

from __future__ import annotations

from dataclasses import dataclass
from xml.etree import ElementTree

import numpy as np

from curation.drawing.sizes import Box
from curation.sample.layout import ORIGINAL_FOLDER


@dataclass
class Annotation:
    """One VOC file to write; coordinates are strings so bad values can be planted."""

    stem: str
    folder: str
    width: int
    height: int
    depth: int
    objects: list[tuple[str, str, str, str, str]]
    filename: str = ""
    malformed: bool = False


def annotation_xml(note: Annotation) -> bytes:
    """The VOC XML of ``note``, cut in half when it is to be malformed."""
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
        for tag, corner in zip(("xmin", "ymin", "xmax", "ymax"), corners, strict=True):
            ElementTree.SubElement(box, tag).text = corner
    ElementTree.indent(root, space="\t")
    text = ElementTree.tostring(root, encoding="unicode") + "\n"
    if note.malformed:
        text = text[: len(text) // 2]
    return text.encode("utf-8")


def objects_of(boxes: tuple[Box, ...]) -> list[tuple[str, str, str, str, str]]:
    """A film's boxes as VOC objects: grade, then the corners, as text."""
    return [(str(pai), str(x1), str(y1), str(x2), str(y2)) for x1, y1, x2, y2, pai in boxes]


def apply_xml_quirks(
    rng: np.random.Generator,
    annotations: list[Annotation],
    clean: set[str],
    patient_numbers: dict[str, int],
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Write every ``<filename>`` and reverse some x corners; return (reversed, numbered).

    A stem in ``patient_numbers`` gets ``PN<number>_pano.jpg`` (every film of one patient,
    or of the copied template, shares its number); others get their own name or, now and
    then, a camera-roll name that matches nothing.
    """
    reversed_stems: list[str] = []
    numbered: list[str] = []
    for note in annotations:
        draw = rng.random()
        if note.stem in patient_numbers:
            note.filename = f"PN{patient_numbers[note.stem]:06d}_pano.jpg"
            numbered.append(note.stem)
        elif draw < 0.1:
            note.filename = f"image ({int(rng.integers(1, 5000))}).jpg"
        else:
            note.filename = f"{note.stem}.jpg"
        eligible = note.stem in clean and note.objects and note.folder == ORIGINAL_FOLDER
        if eligible and (rng.random() < 0.1 or len(reversed_stems) < 2):
            name, x1, y1, x2, y2 = note.objects[0]
            note.objects[0] = (name, x2, y1, x1, y2)
            reversed_stems.append(note.stem)
    return tuple(sorted(set(reversed_stems))), tuple(sorted(set(numbered)))
