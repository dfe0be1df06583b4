"""A tiny source archive in the real layout, for the download tests (over HTTP and local)."""

from __future__ import annotations

import hashlib
import io
import stat
import zipfile

from PIL import Image

from curation.source.source import Source

LESIONS = "Periapical Dataset/Periapical Lesions"
ORIGINAL = f"{LESIONS}/Original JPG Images/00011.jpg"
AUGMENTED = f"{LESIONS}/Augmentation JPG Images/00012.jpg"
ANNOTATION = f"{LESIONS}/Image Annots/00011.xml"
RAR = "Periapical Dataset.rar"
FIXED_TIME = (2024, 1, 1, 0, 0, 0)


def jpeg(shade: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("L", (64, 32), shade).save(buffer, format="JPEG")
    return buffer.getvalue()


def voc(stem: str, grade: int) -> bytes:
    return (
        f"<annotation><filename>{stem}.jpg</filename><object><name>{grade}</name>"
        "<bndbox><xmin>4</xmin><ymin>4</ymin><xmax>20</xmax><ymax>12</ymax></bndbox>"
        "</object></annotation>"
    ).encode()


def real_layout_zip(variant: int = 0) -> bytes:
    """A tiny archive in the real layout; ``variant`` changes its bytes, not its size."""
    members = {
        f"{LESIONS}/": b"",
        ORIGINAL: jpeg(100),
        AUGMENTED: jpeg(150),
        ANNOTATION: voc("00011", 3 + variant),
        RAR: b"Rar!\x1a\x07\x00 duplicate of the folder",
    }
    return zip_bytes(members)


def zip_bytes(
    members: dict[str, bytes],
    modes: dict[str, int] | None = None,
    compression: int = zipfile.ZIP_STORED,
) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for name, data in members.items():
            info = zipfile.ZipInfo(name, FIXED_TIME)
            info.compress_type = compression
            info.external_attr = (modes or {}).get(name, stat.S_IFREG | 0o644) << 16
            zf.writestr(info, data)
    return buffer.getvalue()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def assert_real_layout(fetched: Source, payload: bytes) -> None:
    assert fetched.sha256 == sha(payload)
    assert fetched.size == len(payload)
    assert fetched.skipped == (RAR,)
    with zipfile.ZipFile(io.BytesIO(payload)) as zf:
        assert (fetched.root / ORIGINAL).read_bytes() == zf.read(ORIGINAL)
        assert (fetched.root / ANNOTATION).read_bytes() == zf.read(ANNOTATION)
    assert not (fetched.root / RAR).exists()
