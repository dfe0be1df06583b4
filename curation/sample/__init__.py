"""A synthetic stand-in for the real archive, so the chain and its tests run without the 8.9 GB.

``write_sample_archive`` draws panoramic-looking films procedurally (numpy at quarter
resolution, upscaled), files them in the real archive's layout with its quirks, plants every
case the chain must handle (augmented copies of every kind, also among the originals under
lower and higher numbers; re-filings at other exposures; look-alike and distant visits;
patient numbers; two encoder signatures; bad inputs) and writes the ground truth next to the
zip as ``<stem>.truth.json``. The generator never consults the project's hash or detection
code: distances fall where the anatomy puts them. Everything follows from the seed: the same
seed gives a byte-identical zip. Figures computed on this sample say nothing about real data.
"""

from curation.sample.archive import write_sample_archive
from curation.sample.layout import (
    ANNOTS_DIR,
    AUGMENT_DIGITS,
    AUGMENTED_DIR,
    JUNK_ARCHIVES,
    ORIGINAL_DIR,
    ROOT,
    SAMPLE_COMMENT,
)
from curation.sample.truth import (
    AugmentedCopy,
    BadInput,
    DoubleAnnotated,
    FilmTruth,
    SampleTruth,
    truth_path,
)

__all__ = [
    "ANNOTS_DIR",
    "AUGMENTED_DIR",
    "AUGMENT_DIGITS",
    "JUNK_ARCHIVES",
    "ORIGINAL_DIR",
    "ROOT",
    "SAMPLE_COMMENT",
    "AugmentedCopy",
    "BadInput",
    "DoubleAnnotated",
    "FilmTruth",
    "SampleTruth",
    "truth_path",
    "write_sample_archive",
]
