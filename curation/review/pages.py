"""The HTML pages' one Jinja2 environment (the review page and the audit report, templates in
``curation/templates``): film ids, paths, labels and findings come from archives and datasets
nobody vouches for, so every template is autoescaped, and a name the page was not given is an
error rather than blank text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined

from curation.core.atomic import atomic_path

_PAGES = Environment(
    loader=PackageLoader("curation", "templates"),
    autoescape=True,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)


def render_page(template: str, **values: Any) -> str:
    """The page ``template`` (a file name in ``curation/templates``) filled with ``values``."""
    return _PAGES.get_template(template).render(**values)


def write_page(target: Path, template: str, **values: Any) -> None:
    """``render_page``'s text written to ``target`` atomically as it is rendered: a page of
    every film a large archive shows would otherwise be held whole three times over (its
    escaped pieces, their join, the encoded bytes)."""
    pieces = _PAGES.get_template(template).generate(**values)
    with atomic_path(target) as tmp, tmp.open("w", encoding="utf-8", newline="") as page:
        page.writelines(pieces)
