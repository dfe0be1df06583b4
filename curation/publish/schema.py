"""The published dataset's fields: the one contract between curation, the card, the audit and
the periapical-lesions environment.

A row is one original film:

- ``film_id``: the source stem as a string (``"00011"``, ``"016094"``; leading zeros kept).
- ``image``: ``{"bytes": <the source JPEG's segments without its text>, "path": "<film_id>.jpg"}``
  (``curation.core.jpeg_publish``).
- ``width``, ``height``: the true pixel size, read from the image (never from the XML).
- ``lesions``: ``[{"box": [x1, y1, x2, y2], "pai": 3 | 4 | 5}]``; box corners are fractions of
  the image width and height measured from the top-left corner, ``x1 < x2`` and ``y1 < y2``.
- ``referral``: ``{"patient_code", "age", "sex", "reason", "text"}``; ``text`` is the rendered
  referral slip handed to the agent.
- ``cluster_id``: the look-alike component, named by its smallest member ``film_id``.
- ``ahash``: the film's 512-bit average hash as 128 lowercase hex digits.

Split shards live at ``data/{split}-00000-of-00001.parquet`` below the dataset folder.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

from splits.figures import SPLITS

if TYPE_CHECKING:
    import datasets

__all__ = ["SPLITS", "features", "shard_name"]  # SPLITS: the split names, from splits.figures


@cache
def features() -> datasets.Features:
    """The fields as ``datasets`` features; a function, since importing ``datasets`` takes
    about a second that the commands not writing or describing shards need not pay."""
    import datasets

    return datasets.Features(
        {
            "film_id": datasets.Value("string"),
            "image": datasets.Image(),
            "width": datasets.Value("int32"),
            "height": datasets.Value("int32"),
            "lesions": datasets.List(
                {
                    "box": datasets.List(datasets.Value("float32"), length=4),
                    "pai": datasets.Value("int8"),
                }
            ),
            "referral": {
                "patient_code": datasets.Value("string"),
                "age": datasets.Value("int16"),
                "sex": datasets.Value("string"),
                "reason": datasets.Value("string"),
                "text": datasets.Value("string"),
            },
            "cluster_id": datasets.Value("string"),
            "ahash": datasets.Value("string"),
        }
    )


def shard_name(split: str) -> str:
    """The file name of a split's single parquet shard, in the Hub's ``data/`` convention."""
    return f"{split}-00000-of-00001.parquet"
