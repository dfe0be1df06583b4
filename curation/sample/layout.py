"""Names and fixed values of the real archive's layout, shared by every part of the sample."""

from __future__ import annotations

from curation.core.build_origin import SAMPLE_COMMENT as SAMPLE_COMMENT  # the zip comment

ROOT = "Periapical Dataset/Periapical Lesions"
ORIGINAL_FOLDER = "Original JPG Images"
AUGMENTED_FOLDER = "Augmentation JPG Images"
ORIGINAL_DIR = f"{ROOT}/{ORIGINAL_FOLDER}"
AUGMENTED_DIR = f"{ROOT}/{AUGMENTED_FOLDER}"
ANNOTS_DIR = f"{ROOT}/Image Annots"
JUNK_ARCHIVES = ("Periapical Dataset/Periapical Lesions.rar", "Periapical Dataset/Annots.rar")

# The last digit of an augmented copy's stem in the archive's augmentation folder.
AUGMENT_DIGITS = {"noise": "2", "scaling": "3", "mirror": "4", "rotation": "5"}
ZIP_TIME = (2024, 1, 1, 0, 0, 0)
