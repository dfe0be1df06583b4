"""Names and limits that the chain, the command line and the card share, each defined once.

Standard library only: the command line builds its options and help from these, and
``pericurate --help`` must not wait for numpy, pyarrow or the Hub client."""

from __future__ import annotations

from enum import StrEnum

# Two films are look-alikes within this Hamming distance of 512 bits, in some orientation.
LOOKALIKE_DISTANCE = 30

# Copies reach 16 bits in their best orientation on real films (issue 11's measurements) and
# 15 on the sample; distinct films start at 61 bits on real films and at 50 on the sample
# (nearest distinct film, python -m bench.margins): the radius keeps a quarter of margin from
# both. Visits of one patient fall inside it; the pixel check tells them apart.
SAME_PICTURE_RADIUS = 32


class Decode(StrEnum):
    """How the average hash decodes a JPEG: at reduced DCT scale (``draft``) or whole."""

    draft = "draft"
    full = "full"


class ExecutorName(StrEnum):
    """Where the chain's per-file work runs: this machine's cores, or a Ray cluster."""

    local = "local"
    ray = "ray"
