"""Reading a Pascal VOC annotation from a downloaded archive (hostile input): ``defusedxml``
refuses DTDs and entities; anything that is not a VOC annotation, or whose boxes cannot be
trusted, raises ``AnnotationError`` with the problem in its message. The patient number a
``<filename>`` may carry is returned for use in memory only."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import ParseError
from defusedxml.ElementTree import parse as parse_xml

if TYPE_CHECKING:
    from xml.etree.ElementTree import Element

MAX_BOXES_PER_FILM = 50  # real films carry a handful of lesions
GRADES = {"3": 3, "4": 4, "5": 5}
PATIENT_NUMBER = re.compile(r"PN\d+")


class AnnotationError(ValueError):
    """An XML that cannot give trustworthy lesions; the message names the problem."""


@dataclass(frozen=True, slots=True)
class RawBox:
    """A VOC box as written: pixel coordinates, maybe reversed, maybe outside the frame.
    Slots: the driver holds every annotation's boxes until its film is checked."""

    xmin: float
    ymin: float
    xmax: float
    ymax: float
    grade: str


@dataclass(frozen=True)
class VocAnnotation:
    """What a VOC file states: its boxes, and the patient number in its ``<filename>``
    if any."""

    boxes: list[RawBox]
    patient_number: str | None


def parse_voc(source: Path | BinaryIO) -> list[RawBox]:
    """Objects of a VOC file; raises ``AnnotationError`` on anything untrustworthy."""
    return read_voc(source).boxes


def read_voc(source: Path | BinaryIO) -> VocAnnotation:
    """Boxes and patient number of a VOC file; ``AnnotationError`` on anything untrustworthy:
    malformed or unsafe XML (DTDs, entities), another document than a VOC annotation, or one
    this reader does not fully understand (``check_elements``)."""
    try:
        root = parse_xml(source, forbid_dtd=True)
    except ParseError as error:
        raise AnnotationError(f"malformed XML ({error})") from None
    except DefusedXmlException:
        raise AnnotationError("unsafe XML: DTDs and entities are not allowed") from None
    root = root.getroot()
    if root.tag != "annotation":
        raise AnnotationError(f"not a VOC annotation: its root element is <{root.tag[:40]}>")
    check_elements(root)
    found = PATIENT_NUMBER.search(root.findtext("filename") or "")
    return VocAnnotation(_voc_boxes(root), found.group() if found else None)


# What a VOC annotation may hold (LabelImg's and the VOC devkit's elements): element -> its
# allowed children, each with how many times it may appear (at most once, or any number).
ONCE: int | None = 1
MANY: int | None = None
ANNOTATION_CHILDREN: dict[str, int | None] = {
    "folder": ONCE,
    "filename": ONCE,
    "path": ONCE,
    "source": ONCE,
    "owner": ONCE,
    "size": ONCE,
    "segmented": ONCE,
    "object": MANY,
}
OBJECT_CHILDREN: dict[str, int | None] = {
    "name": ONCE,
    "pose": ONCE,
    "truncated": ONCE,
    "difficult": ONCE,
    "occluded": ONCE,
    "bndbox": ONCE,
}
CORNERS = ("xmin", "ymin", "xmax", "ymax")
BNDBOX_CHILDREN: dict[str, int | None] = dict.fromkeys(CORNERS, ONCE)
KNOWN_NAMES = {"annotation", *ANNOTATION_CHILDREN, *OBJECT_CHILDREN, *BNDBOX_CHILDREN}


def check_elements(root: Element) -> None:
    """Refuse what could hide or double a label: a namespaced element anywhere (``<v:object>``),
    a case variant of a VOC name (``<Object>``), an element VOC does not define in the
    annotation, an object or its box, a field given twice (two ``<name>``, two ``<bndbox>``,
    two ``<xmin>``: which one is meant cannot be told), and children inside a value."""
    for element in root.iter():
        tag = element.tag
        if not isinstance(tag, str):
            continue  # comments and processing instructions hold no labels
        if tag.startswith("{"):
            raise AnnotationError(f"namespaced element <{tag[:60]}>: not plain VOC")
        if tag not in KNOWN_NAMES and tag.lower() in KNOWN_NAMES:
            raise AnnotationError(f"element <{tag[:40]}> is not VOC's <{tag.lower()}>")
    _check_children(root, "annotation", ANNOTATION_CHILDREN)
    for obj in root.findall("object"):
        _check_children(obj, "object", OBJECT_CHILDREN)
        for box in obj.findall("bndbox"):
            _check_children(box, "bndbox", BNDBOX_CHILDREN)
        for field in (*obj.findall("name"), *obj.findall("bndbox/*")):
            if len(field):
                raise AnnotationError(f"<{field.tag}> holds elements, not a value")


def _check_children(parent: Element, name: str, allowed: dict[str, int | None]) -> None:
    seen: dict[str, int] = {}
    for child in parent:
        if not isinstance(child.tag, str):
            continue
        if child.tag not in allowed:
            raise AnnotationError(f"unknown element <{child.tag[:40]}> in <{name}>")
        seen[child.tag] = seen.get(child.tag, 0) + 1
        limit = allowed[child.tag]
        if limit is not None and seen[child.tag] > limit:
            raise AnnotationError(f"<{child.tag}> given twice in one <{name}>")


def _voc_boxes(root: Element) -> list[RawBox]:
    boxes = []
    for obj in root.findall("object"):
        name = obj.find("name")
        if name is None:
            raise AnnotationError("an <object> without a <name>")
        grade = (name.text or "").strip()
        if grade not in GRADES:
            raise AnnotationError(f"unknown grade {grade!r} (expected 3, 4 or 5)")
        if obj.find("bndbox") is None:
            raise AnnotationError("an <object> without a <bndbox>")
        coords = []
        for tag in CORNERS:
            text = obj.findtext(f"bndbox/{tag}")
            try:
                value = float(text) if text is not None else math.nan
            except ValueError:
                raise AnnotationError(f"{tag} {text!r} is not a number") from None
            if not math.isfinite(value):
                raise AnnotationError(f"{tag} is {text!r}, not a finite number")
            if value < 0:
                raise AnnotationError(f"{tag} {value:g} is negative")
            coords.append(value)
        xmin, ymin, xmax, ymax = coords
        boxes.append(RawBox(xmin, ymin, xmax, ymax, grade))
        if len(boxes) > MAX_BOXES_PER_FILM:
            raise AnnotationError(f"too many boxes: more than {MAX_BOXES_PER_FILM} on one film")
    return boxes
