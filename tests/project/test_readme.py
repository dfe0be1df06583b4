"""The README is the user's map: its step table and command list must be the CLI's, and
every file it links to must exist."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from curation.chain.chain import CHAIN
from curation.cli.app import app

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def _cli_commands() -> list[str]:
    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    listed = result.output.split("Commands:")[1]
    return [line.split()[0] for line in listed.splitlines() if re.match(r"  \S", line)]


def _step_table() -> list[tuple[int, str]]:
    section = README.split("## The steps")[1].split("\n## ")[0]
    rows = re.findall(r"^\| (\d+) \| `([a-z-]+)` \|", section, flags=re.MULTILINE)
    return [(int(number), name) for number, name in rows]


def test_the_step_table_is_the_chain_in_order():
    assert _step_table() == list(enumerate(["download", *(s.name for s in CHAIN)], start=1))


def test_the_readme_names_every_command_and_no_other():
    section = README.split("## The steps")[1].split("\n## ")[0]
    others = re.search(r"Other commands: (.*?)\.", section, flags=re.DOTALL)
    assert others, "the chain section lists the other commands"
    named = {name for _, name in _step_table()} | set(re.findall(r"`([a-z-]+)`", others[1]))
    assert named == set(_cli_commands())


def test_every_linked_file_exists():
    links = re.findall(r"\]\(([^)#]+)\)", README)
    assert links
    for link in links:
        if not link.startswith("http"):
            assert (ROOT / link).is_file(), link


def test_no_internal_issue_numbers():
    assert not re.search(r"\bissues? \d+", README, flags=re.IGNORECASE)


def test_the_readme_is_short_and_says_what_make_test_costs_as_the_makefile_does():
    assert len(README.splitlines()) <= 150
    cost = re.compile(r"about \d+ minutes on \d+ cores")
    makefile = (ROOT / "Makefile").read_text()
    said = set(cost.findall(README)) | set(cost.findall(makefile))
    assert len(said) == 1 and cost.search(README), said
