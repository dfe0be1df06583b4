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


@dataclass(frozen=True)
class RawBox:
    """A VOC box as written: pixel coordinates, maybe reversed, maybe outside the frame."""

    xmin: float
    ymin: float
    xmax: float
    ymax: float
    grade: str


@dataclass(frozen=True)
class VocAnnotation:
    boxes: list[RawBox]
    patient_number: str | None


def parse_voc(source: Path | BinaryIO) -> list[RawBox]:
    """Objects of a VOC file; raises ``AnnotationError`` on anything untrustworthy."""
    return read_voc(source).boxes


def read_voc(source: Path | BinaryIO) -> VocAnnotation:
    """Boxes and patient number of a VOC file; ``AnnotationError`` on anything untrustworthy:
    malformed or unsafe XML (DTDs, entities), another document than a VOC annotation."""
    try:
        root = parse_xml(source, forbid_dtd=True)
    except ParseError as error:
        raise AnnotationError(f"malformed XML ({error})") from None
    except DefusedXmlException:
        raise AnnotationError("unsafe XML: DTDs and entities are not allowed") from None
    root = root.getroot()
    if root.tag != "annotation":
        raise AnnotationError(f"not a VOC annotation: its root element is <{root.tag[:40]}>")
    found = PATIENT_NUMBER.search(root.findtext("filename") or "")
    return VocAnnotation(_voc_boxes(root), found.group() if found else None)


def _voc_boxes(root: Element) -> list[RawBox]:
    boxes = []
    for obj in root.iter("object"):
        grade = (obj.findtext("name") or "").strip()
        if grade not in GRADES:
            raise AnnotationError(f"unknown grade {grade!r} (expected 3, 4 or 5)")
        coords = []
        for tag in ("xmin", "ymin", "xmax", "ymax"):
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
        boxes.append(RawBox(*coords, grade=grade))
        if len(boxes) > MAX_BOXES_PER_FILM:
            raise AnnotationError(f"too many boxes: more than {MAX_BOXES_PER_FILM} on one film")
    return boxes
