"""Hostile source data shared by its tests: films carrying patient text, annotations the
reader does not fully understand, a fullwidth-digit stem, and a rewrite of a parquet's rows
as another run would have written them."""

from __future__ import annotations

import io
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image

from tests.hostile_films import film_bytes, voc

PATIENT = b"PN12345"
FULLWIDTH = "\uff13\uff19\uff19\uff191"  # fullwidth 3999 and an ASCII 1: \d takes all five
GOOD_FILMS = 40  # above the 35 films the default splits need


def good_films(count: int = GOOD_FILMS) -> dict[str, tuple[bytes, str]]:
    return {f"{3000 + k}1": (film_bytes(100 + k), voc(f"{3000 + k}1")) for k in range(count)}


def film_with_patient_text() -> bytes:
    """A film carrying a patient number in a COM comment, in EXIF, in an APP13 segment and
    after its end marker: the places no reader of the dataset looks."""
    picture = Image.open(io.BytesIO(film_bytes(77)))
    exif = Image.Exif()
    exif[0x010E] = f"patient {PATIENT.decode()}"  # ImageDescription
    buffer = io.BytesIO()
    picture.save(buffer, "JPEG", quality=95, comment=PATIENT, exif=exif.tobytes())
    data = buffer.getvalue()
    app13 = b"Photoshop 3.0\x00" + PATIENT
    data = data[:2] + b"\xff\xed" + (len(app13) + 2).to_bytes(2, "big") + app13 + data[2:]
    return data + b"name: " + PATIENT + b"\n"


B = "<bndbox><xmin>40</xmin><ymin>30</ymin><xmax>120</xmax><ymax>70</ymax></bndbox>"
UNDERSTOOD_NOT = {
    "namespaced object": (
        f"<annotation xmlns:v='urn:v'><v:object><name>4</name>{B}</v:object></annotation>",
        "namespaced element",
    ),
    "capitalised object": (
        f"<annotation><Object><name>4</name>{B}</Object></annotation>",
        "<Object> is not VOC's <object>",
    ),
    "two names": (
        f"<annotation><object><name>3</name><name>5</name>{B}</object></annotation>",
        "<name> given twice",
    ),
    "two boxes": (
        f"<annotation><object><name>4</name>{B}{B.replace('40', '200')}</object></annotation>",
        "<bndbox> given twice",
    ),
    "two xmin": (
        "<annotation><object><name>4</name><bndbox><xmin>40</xmin><xmin>90</xmin>"
        "<ymin>30</ymin><xmax>120</xmax><ymax>70</ymax></bndbox></object></annotation>",
        "<xmin> given twice",
    ),
    "unknown element in an object": (
        f"<annotation><object><name>4</name><grade>5</grade>{B}</object></annotation>",
        "unknown element <grade> in <object>",
    ),
    "element inside a value": (
        f"<annotation><object><name>4<b>5</b></name>{B}</object></annotation>",
        "<name> holds elements",
    ),
}


def rewrite_rows(path: Path, change) -> None:
    rows = pq.read_table(path).to_pylist()
    change(rows)
    pq.write_table(pa.Table.from_pylist(rows, schema=pq.read_schema(path)), path)


def move_first_film(rows: list[dict]) -> None:
    rows[0]["split"] = "test" if rows[0]["split"] != "test" else "train"
