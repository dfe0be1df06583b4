"""Unpinned and pinned dataset revisions against the Hub stand-in (real huggingface_hub client
on 127.0.0.1): an unpinned load resolves the current commit once, says so and records it on
every task; a pinned load stays on its commit after the branch moves."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from huggingface_hub import constants
from periapical_lesions.taskset import PeriapicalLesionsConfig, PeriapicalLesionsTaskset

from tests.hub_standin import HubStandIn, Repo, hub_standin

from .conftest import SCHEMA, film_rows

__all__ = ["hub_standin"]
REPO = "someone/periapical-films"


def dataset_files(rows: list[dict]) -> dict[str, bytes]:
    buffer = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), buffer)
    card = f"---\ndataset_info:\n  splits:\n  - name: test\n    num_examples: {len(rows)}\n---\n"
    return {"data/test-00000-of-00001.parquet": buffer.getvalue(), "README.md": card.encode()}


def publish(hub: HubStandIn, rows: list[dict]) -> str:
    """Commit `rows` as the test split on the stand-in's main branch; returns the sha."""
    repo = hub.repos.setdefault(REPO, Repo(REPO))
    made = repo.commit(repo.branches.get("main"), "data", dataset_files(rows))
    repo.branches["main"] = made.sha
    return made.sha


@pytest.fixture
def hub(hub_standin: HubStandIn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> HubStandIn:
    monkeypatch.setenv("HF_ENDPOINT", hub_standin.url)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "no-token"))
    return hub_standin


def load(revision: str | None) -> list:
    config = PeriapicalLesionsConfig(dataset=REPO, revision=revision, split="test")
    return list(PeriapicalLesionsTaskset(config))


def test_unpinned_load_resolves_prints_and_records_the_current_commit(
    hub: HubStandIn, capsys: pytest.CaptureFixture
) -> None:
    first = publish(hub, film_rows())
    tasks = load(None)
    assert [t.data.film_id for t in tasks] == [row["film_id"] for row in film_rows()]
    assert {(t.data.dataset, t.data.dataset_revision) for t in tasks} == {(REPO, first)}
    assert {t.data.dataset_pinned for t in tasks} == {False}
    message = capsys.readouterr().err
    assert message.startswith("periapical-lesions: UNPINNED dataset: ")
    assert first in message and f"--env.taskset.revision {first}" in message
    assert any(f"/resolve/{first}/data/test-" in request for request in hub.requests)
    traced = json.loads(tasks[0].data.model_dump_json())
    assert traced["dataset_revision"] == first


def test_an_empty_revision_in_a_config_means_unpinned(hub: HubStandIn) -> None:
    first = publish(hub, film_rows())
    assert {t.data.dataset_revision for t in load("")} == {first}


def test_pinned_load_stays_exact_after_the_branch_moves(
    hub: HubStandIn, capsys: pytest.CaptureFixture
) -> None:
    first = publish(hub, film_rows())
    second = publish(hub, film_rows()[:3])
    assert second != first
    capsys.readouterr()
    pinned = load(first)
    assert len(pinned) == len(film_rows()) and {t.data.dataset_revision for t in pinned} == {first}
    assert {t.data.dataset_pinned for t in pinned} == {True}
    assert "no dataset revision is pinned" not in capsys.readouterr().err
    moved = load(None)
    assert len(moved) == 3 and {t.data.dataset_revision for t in moved} == {second}


def test_unreachable_hub_fails_in_one_sentence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    with pytest.raises(ValueError, match=r"^Cannot find the current revision of .*\.$") as caught:
        load(None)
    assert "\n" not in str(caught.value)
