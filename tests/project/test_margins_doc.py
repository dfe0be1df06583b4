"""``docs/margins.md`` is cited by section name (`docs/margins.md`, "Visits"): every such
citation in the code, the tests, the bench and the docs names a section the page has."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CITED = re.compile(r'docs/margins\.md`?\)?[,;:]?\s*\(?"([^"]+)"')
SEARCHED = ("curation", "splits", "cards", "bench", "support", "tests", "docs", "README.md")


def sections(page: Path) -> set[str]:
    return {line[3:].strip() for line in page.read_text().splitlines() if line.startswith("## ")}


def citations() -> list[tuple[str, str]]:
    found = []
    for name in SEARCHED:
        top = ROOT / name
        files = [top] if top.is_file() else [*top.rglob("*.py"), *top.rglob("*.md")]
        # Not the project's text: installed environments and corpora the benches make.
        for path in (f for f in files if not {".venv", "corpus"} & set(f.parts)):
            text = " ".join(path.read_text(encoding="utf-8").split())
            found += [(str(path.relative_to(ROOT)), m) for m in CITED.findall(text)]
    return found


def test_every_cited_section_of_the_margins_page_exists() -> None:
    named = sections(ROOT / "docs" / "margins.md")
    cited = citations()
    assert cited, "no citation of docs/margins.md found: the pattern no longer matches"
    missing = [(path, section) for path, section in cited if section not in named]
    assert not missing, missing


def test_the_sections_later_work_fills_are_there() -> None:
    assert {"Same picture", "Frame check", "Keeper", "Visits", "Hashing", "Scale"} <= sections(
        ROOT / "docs" / "margins.md"
    )
