"""The licence texts written into a build: the data stay under the source's CC BY 4.0, whose
attribution the NOTICE carries; the code that made them is under Apache-2.0."""

from __future__ import annotations

DATA_LICENSE = """\
The data in this dataset (the radiographs and their lesion annotations) are licensed under
the Creative Commons Attribution 4.0 International licence (CC BY 4.0):
https://creativecommons.org/licenses/by/4.0/legalcode

They are redistributed, curated and reformatted, from:
{citation}

Changes made: augmented copies and near-identical films removed, annotations converted to
fractional boxes with PAI grades, films grouped and split into train, validation and test,
and synthetic referral slips added. See README.md and curation.json for every step.
"""

NOTICE = """\
This dataset contains material from:

  {citation}
  https://doi.org/{doi}

Original authors: Do et al. (2024). Licensed under CC BY 4.0
(https://creativecommons.org/licenses/by/4.0/). The original work is not endorsed by, and
its authors are not affiliated with, the curators of this dataset. The referral slips are
synthetic and are not part of the original work.

The code that made this dataset (pericurate) is licensed under the Apache License 2.0.
"""


def license_texts(citation: str, doi: str) -> dict[str, str]:
    """File name -> text of the data's LICENSE and NOTICE."""
    return {
        "LICENSE": DATA_LICENSE.format(citation=citation),
        "NOTICE": NOTICE.format(citation=citation, doi=doi),
    }
