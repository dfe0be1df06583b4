"""Which visit search the audit runs: the one asked for, else exact up to its bound and the
lists above; the report and the page name it."""

from __future__ import annotations

import html
import json
from pathlib import Path

import numpy as np
import pytest

from curation.visits import find as visit_find
from tests.audit.audit_runs import FAST, run, write_generic


@pytest.fixture
def listed_counts(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The film counts the lists were searched over, none found; the lists start from 2
    films, so that a small dataset reaches them."""
    searched: list[int] = []

    def lists(blocks, map, partners, bar=None):
        searched.append(blocks.count)
        return np.zeros((0, 2), np.int32)

    monkeypatch.setattr(visit_find, "INVERTED_FROM", 2)
    monkeypatch.setattr(visit_find, "stored_inverted_pairs", lists)
    return searched


def test_the_visit_search_asked_for_is_the_one_run_and_the_report_names_it(
    tmp_path: Path, listed_counts: list[int]
):
    """``--visit-search exact`` compares every film even where the lists would be searched
    (made to start from 2 films here); the report and the page say which search ran."""
    folder = write_generic(tmp_path / "data")
    for choice in ("exact", "lists"):
        result = run(folder, "--out", tmp_path / choice, "--visit-search", choice, *FAST)
        assert result.exit_code == 0, result.output
        report = json.loads((tmp_path / choice / "report.json").read_text())
        phrase = report["cross_split_visits"]["search"]
        assert phrase.startswith(f"{choice}: ")
        assert phrase in html.unescape((tmp_path / choice / "report.html").read_text())
    assert listed_counts == [12]  # the lists' run alone


def test_by_default_the_visit_search_is_exact_up_to_its_bound_and_the_lists_above(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, listed_counts: list[int]
):
    """With no ``--visit-search``, the 12 films are compared exactly while the bound allows
    12 films (the lists made to start from 2 films), through the lists once it allows 11."""
    folder = write_generic(tmp_path / "data")
    ran = {}
    for bound in (12, 11):
        monkeypatch.setattr(visit_find, "EXACT_UP_TO", bound)
        result = run(folder, "--out", tmp_path / f"up-to-{bound}", *FAST)
        assert result.exit_code == 0, result.output
        report = json.loads((tmp_path / f"up-to-{bound}" / "report.json").read_text())
        ran[bound] = report["cross_split_visits"]["search"].split(":")[0]
    assert ran == {12: "exact", 11: "lists"}
    assert listed_counts == [12]  # the lists' run alone
