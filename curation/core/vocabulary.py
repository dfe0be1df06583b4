"""Names and limits that the chain, the command line and the card share, each defined once.

Standard library only: the command line builds its options and help from these, and
``pericurate --help`` must not wait for numpy, pyarrow or the Hub client."""

from __future__ import annotations

from enum import StrEnum

# Two films are look-alikes within this Hamming distance of 512 bits, in some orientation.
LOOKALIKE_DISTANCE = 30

# Copies reach 16 bits in their best orientation on real films and 15 on the sample; distinct
# films start at 61 bits on real films and at 50 on the sample (nearest distinct film, python
# -m bench.margins.same_picture): the radius keeps a quarter of margin from both; docs/margins.md,
# "Same picture". Visits of one patient fall inside it; the pixel check tells them apart.
SAME_PICTURE_RADIUS = 32


class Decode(StrEnum):
    """How the average hash decodes a JPEG: at reduced DCT scale (``draft``) or whole."""

    draft = "draft"
    full = "full"


class ExecutorName(StrEnum):
    """Where the chain's per-file work runs: this machine's cores, or a Ray cluster."""

    local = "local"
    ray = "ray"


class VisitSearch(StrEnum):
    """How the visit check searches each film's nearest films: through lists from 4,096
    films on (``curation.visits.inverted``: the cost a film stays flat, and look-alikes whose
    features share little can be missed as the films grow), every film against every film
    (every such pair kept; the cost grows with the square of the films), or ``auto``: exact
    up to ``EXACT_UP_TO`` films, the lists above."""

    auto = "auto"
    lists = "lists"
    exact = "exact"


# ``VisitSearch.auto`` is exact up to here: the largest audit measured with the exact search
# that found every planted pair (bench/scale/audit_cluster.json, "128000 exact": 1.31 times
# the lists' CPU there, which found 913 of 1,280). Past it the exact search's cost a film keeps
# growing with the films, unmeasured (docs/scale.md, "128,000 rows, exact and through the lists").
EXACT_UP_TO = 128_000


class Reason(StrEnum):
    """The classes of the reasons the chain gives for its own decisions; a record's reason
    is the class, then ``: `` and the free-text detail (``reason_text``). A file's own
    problem (a refused header, a corrupt scan, a bad annotation) keeps the words of the
    check that found it."""

    kept = "kept"
    augmented_copy = "augmented copy"  # by folder and stem
    augmented_copy_among_originals = "augmented copy among originals"  # by picture
    # A re-filing of the same radiograph, recorded as "near-identical": the manifest's readers
    # match the reason by its words.
    refiling = "near-identical"
    annotation_of_kept = "annotation of a kept film"
    annotation_of_dropped = "annotation of a dropped film"
    annotation_of_rejected = "annotation of a rejected film"
    ambiguous_annotation = "ambiguous annotation"
    archive_member_not_extracted = "archive member not extracted"


def reason_text(reason: Reason, detail: str = "") -> str:
    """A record's reason: its class, then the detail when there is one."""
    return f"{reason}: {detail}" if detail else str(reason)
