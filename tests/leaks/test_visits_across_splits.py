"""Visits of one patient across splits: the audit lists them first
(``curation.leaks.visits``), ``--strict-patients`` makes them fail the audit,
``--link-visits`` keeps them in one split, and the card counts them; on the sample's planted
visit groups."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from curation.chain.executors import LocalExecutor
from curation.chain.runner import Settings, curate
from curation.lookalikes import LookalikeConfig
from curation.publish.card import render_card
from curation.publish.summary import Summary
from tests.audit.audit_runs import run

FAST = ("--permutations", "199")


def split_of(build: Path) -> dict[str, str]:
    """Film id -> split of a build's dataset."""
    found = {}
    for shard in sorted((build / "dataset" / "data").glob("*.parquet")):
        split = shard.name.split("-", 1)[0]
        for film in pq.read_table(shard, columns=["film_id"]).column(0).to_pylist():
            found[film] = split
    return found


def planted_groups(truth) -> list[tuple[str, ...]]:
    """Every planted visit group: look-alike, distant and realistic visits."""
    return [*truth.lookalike_groups, *truth.distant_visit_groups, *truth.realistic_visits]


@pytest.fixture(scope="module")
def audited(sample_build: Path, tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("audit-visits")
    return run(sample_build, "--out", out, *FAST), out


def test_every_planted_visit_group_across_splits_is_flagged_first(
    sample_zip, sample_build, audited
):
    result, out = audited
    report = json.loads((out / "report.json").read_text())
    listed = report["cross_split_visits"]["listed"]
    pairs = {frozenset((v["film"]["film_id"], v["other"]["film_id"])) for v in listed}
    splits = split_of(sample_build)
    crossing = []
    for group in planted_groups(sample_zip[1]):
        kept = [f for f in group if f in splits]
        if len({splits[f] for f in kept}) > 1:
            crossing.append(group)
            assert any(pair <= set(kept) for pair in pairs), (group, listed)
    assert crossing, "the sample build has no planted visit group across splits to flag"
    assert all(v["kind"] == "visit of one patient" for v in listed)
    # The two films sharing a burned-in label are never listed as one patient's.
    assert frozenset(sample_zip[1].shared_label_films) not in pairs
    assert report["cross_split_visits"]["visits_of_one_patient"] == len(listed)
    assert not report["clean"]
    for entry in listed:
        assert (out / entry["drawing"]).read_bytes().startswith(b"\x89PNG")
    # The terminal lists them before anything else (the progress bars aside) and never calls
    # the splits clean.
    first = result.output.splitlines()
    assert "PATIENT" in next(line for line in first if line.strip() and "━" not in line)
    assert "no leakage" not in result.output.replace("\n", " ").split("not clean")[0]
    page = (out / "report.html").read_text()
    verdict = page[page.index('id="verdict"') : page.index("</section>")]
    assert "visits of one patient cross splits" in verdict  # the page's first words say so
    assert page.index('id="verdict"') < page.index('id="visits"')


def test_visits_alone_exit_0_by_default_and_1_with_strict_patients(sample_build, audited, tmp_path):
    result, out = audited
    report = json.loads((out / "report.json").read_text())
    assert report["findings"] == [] and report["cross_split_visits"]["listed"]
    assert result.exit_code == 0, result.output
    strict = run(sample_build, "--out", tmp_path, *FAST, "--strict-patients")
    assert strict.exit_code == 1, strict.output


def test_the_card_counts_the_visits_that_cross_splits_without_link_visits(sample_build, audited):
    summary = Summary.load(sample_build / "curation.json")
    assert summary.flat_settings().link_visits is False
    _, out = audited
    report = json.loads((out / "report.json").read_text())
    assert summary.counts.visits_across_splits == len(report["cross_split_visits"]["listed"])
    card = render_card(sample_build)
    assert f"{summary.counts.visits_across_splits} of them cross splits" in card
    assert "`--link-visits`" in card


@pytest.fixture(scope="module")
def linked_build(sample_source, tmp_path_factory: pytest.TempPathFactory) -> Path:
    build = tmp_path_factory.mktemp("linked")
    curate(
        sample_source, build, Settings(LookalikeConfig(link_visits=True)), executor=LocalExecutor(1)
    )
    return build


def test_link_visits_puts_every_planted_visit_group_in_one_split(
    sample_zip, sample_build, linked_build
):
    splits = split_of(linked_build)
    for group in planted_groups(sample_zip[1]):
        kept = [f for f in group if f in splits]
        assert len({splits[f] for f in kept}) <= 1, (group, {f: splits[f] for f in kept})
    # The realistic revisits were verified and joined, not dropped as copies.
    assert all(f in splits for pair in sample_zip[1].realistic_visits for f in pair)
    summary = Summary.load(linked_build / "curation.json")
    assert summary.flat_settings().link_visits is True
    assert summary.counts.visits_across_splits == 0 and summary.counts.verified_visits > 0
    assert "joined into the components (`--link-visits`)" in render_card(linked_build)
    # Without the flag, the same source gives other splits for some planted group.
    unlinked = split_of(sample_build)
    assert any(
        len({unlinked[f] for f in group if f in unlinked}) > 1
        for group in planted_groups(sample_zip[1])
    )
