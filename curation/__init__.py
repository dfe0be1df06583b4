"""pericurate's toolkit. Its Python API (``curation.api``: ``curate``, ``audit_splits``,
``find_same_pictures``, ``find_lookalikes``, ``find_visits``) is importable from here, and
loaded on first use, so that importing a submodule (``pericurate --help``) stays light."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from curation.api import (
        CurationError,
        audit_splits,
        curate,
        download,
        find_lookalikes,
        find_same_pictures,
        find_visits,
        manifest,
    )

__all__ = [
    "CurationError",
    "audit_splits",
    "curate",
    "download",
    "find_lookalikes",
    "find_same_pictures",
    "find_visits",
    "manifest",
]


def __getattr__(name: str) -> Any:
    """``curation.curate`` and the rest of the API, imported when first asked for."""
    if name in __all__:
        from curation import api

        return getattr(api, name)
    raise AttributeError(f"module 'curation' has no attribute {name!r}")
