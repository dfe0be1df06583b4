"""Steps hand over products, never side channels: a step is given its own config only (what a
later step needs of it is a product it writes), and the same-picture and keeper steps are two
steps, the second reading the first's confirmed pairs."""

from __future__ import annotations

import ast
from pathlib import Path

import curation
from curation.chain.chain import CHAIN, through
from curation.chain.run import Run
from curation.chain.runner import Settings
from curation.core.parallel import LocalMap
from curation.core.records import Fate
from curation.source.source import Source

TOOLKIT = Path(curation.__file__).parent


class _Quiet:
    def total(self, count: int) -> None:
        pass

    def advance(self, count: int) -> None:
        pass


def settings_reads(tree: ast.AST) -> list[tuple[int, str]]:
    """Each use of a ``.settings`` attribute in ``tree`` other than ``.settings.record()``
    (the run's record of every step's settings, which the build writes to curation.json):
    its line and the expression."""
    recorded = {
        id(node.func.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "record"
    }
    return [
        (node.lineno, ast.unparse(node))
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr == "settings" and id(node) not in recorded
    ]


def test_only_step_apply_reads_a_config_from_the_runs_settings():
    """``Step.apply`` gives each step its config; any other read of ``run.settings`` (a step
    reading another step's setting, or a helper handed the run) is a side channel."""
    found = {
        str(path.relative_to(TOOLKIT.parent)): settings_reads(ast.parse(path.read_text()))
        for path in sorted(TOOLKIT.rglob("*.py"))
    }
    found = {path: uses for path, uses in found.items() if uses}
    assert [expression for _, expression in found.pop("curation/chain/chain.py", [])] == [
        "run.settings"
    ]
    assert found == {}


def test_the_check_sees_a_step_reading_another_steps_setting():
    planted = ast.parse(
        "def write_build(run, config):\n"
        "    fractions = run.settings.of(AssignConfig).fractions\n"
        "    return run.settings.record()\n"
    )
    assert settings_reads(planted) == [(2, "run.settings")]


def test_the_chain_apply_gives_a_step_its_own_config_only():
    source = ast.parse((TOOLKIT / "chain" / "chain.py").read_text())
    reads = [
        ast.unparse(node)
        for node in ast.walk(source)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "of"
        and ast.unparse(node.func.value) == "run.settings"
    ]
    assert reads == ["run.settings.of(self.config)"]


def test_every_product_is_read_by_a_later_step_or_is_the_chains_result():
    """A product nobody reads is a side channel's leftover, or dead."""
    for place, step in enumerate(CHAIN[:-1]):
        later = {name for other in CHAIN[place + 1 :] for name in other.reads}
        assert set(step.writes) <= later, step.name


def test_the_keeper_groups_exactly_the_pairs_the_same_picture_step_confirmed(
    sample_source: Source, tmp_path: Path
):
    """The same-picture step settles no film; the keeper step groups its pairs, no other
    films, and settles the films it drops."""
    run = Run(sample_source, tmp_path, Settings(), lambda what, total: _Quiet(), LocalMap(1))
    made: dict[str, dict[str, object]] = {}
    products: dict[str, object] = {}
    for step in through("keeper"):
        products = step.apply(run, products)
        made[step.name] = products
    pairs = made["same-picture"]["same_picture_pairs"].pairs  # type: ignore[attr-defined]
    groups = made["keeper"]["kept_groups"].groups  # type: ignore[attr-defined]
    assert pairs and groups
    group_of = {f: g.kept for g in groups for f in (g.kept, *(d.film_id for d in g.dropped))}
    assert all(group_of[p.a] == group_of[p.b] for p in pairs)
    assert set(group_of) == {f for p in pairs for f in (p.a, p.b)}

    def dropped(step: str) -> set[str]:
        records = made[step]["records"]
        return {r.film_id for r in records if r.fate is Fate.dropped}  # type: ignore[attr-defined]

    assert dropped("same-picture") == dropped("hash")
    assert dropped("keeper") - dropped("hash") == {d.film_id for g in groups for d in g.dropped}
