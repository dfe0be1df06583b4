"""The periapical-lesions task environment: read a panoramic film, report every periapical
lesion with its PAI grade, file the report.

The taskset and the environment (the seat's defaults: sandbox image, no egress) are imported
on first use, so `periapical_lesions.scoring` (reused by the curation
toolkit's agreement command) does not pay for importing verifiers.
"""

from __future__ import annotations

from typing import Any

__all__ = ["PeriapicalLesionsEnv", "PeriapicalLesionsTaskset"]


def __getattr__(name: str) -> Any:
    if name == "PeriapicalLesionsTaskset":
        from periapical_lesions.taskset import PeriapicalLesionsTaskset

        return PeriapicalLesionsTaskset
    if name == "PeriapicalLesionsEnv":
        from periapical_lesions.environment import PeriapicalLesionsEnv

        return PeriapicalLesionsEnv
    raise AttributeError(f"module 'periapical_lesions' has no attribute {name!r}")
