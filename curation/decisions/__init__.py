"""Curator decisions: what a person who looked at the films overrules in a build, read from
``BUILD/decisions.toml`` (beside the source lock): two films that are not the same picture,
films of one patient, a film to reject. The build honours them (``curation.chain.steps``),
records them in ``curation.json``, the card and the review page, and the audit of a build
reads them (``curation.audit.decided``). Standard library only, so the up-to-date check can
name the file without importing anything heavy."""

from curation.decisions.decisions import (
    CURATOR_REJECTED,
    DECISIONS_NAME,
    Decision,
    Decisions,
    DecisionsError,
    read_decisions,
    recorded_decisions,
)

__all__ = [
    "CURATOR_REJECTED",
    "DECISIONS_NAME",
    "Decision",
    "Decisions",
    "DecisionsError",
    "read_decisions",
    "recorded_decisions",
]
