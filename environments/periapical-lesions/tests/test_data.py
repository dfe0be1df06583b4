from pathlib import Path

import pytest
from periapical_lesions import data
from periapical_lesions.taskset import PeriapicalLesionsConfig, PeriapicalLesionsTaskset

SHA = "0123456789abcdef0123456789abcdef01234567"


def test_one_task_per_film_keyed_by_film_id(
    synthetic_dataset_dir: Path, synthetic_rows: list[dict]
) -> None:
    tasks = list(PeriapicalLesionsTaskset(PeriapicalLesionsConfig(data_dir=synthetic_dataset_dir)))
    assert [task.key for task in tasks] == [row["film_id"] for row in synthetic_rows]
    assert [task.data.lesions for task in tasks][2:4] == [[], []]


def test_card_row_count_mismatch_fails_naming_both(
    tmp_path: Path, synthetic_rows: list[dict], dataset_writer
) -> None:
    folder = dataset_writer(tmp_path / "ds", "test", synthetic_rows, card_count=7)
    config = PeriapicalLesionsConfig(data_dir=folder)
    with pytest.raises(data.DatasetError, match=r"holds 5 rows but the dataset card .* has 7"):
        list(PeriapicalLesionsTaskset(config))


def test_card_without_the_split_fails(
    tmp_path: Path, synthetic_rows: list[dict], dataset_writer
) -> None:
    folder = dataset_writer(tmp_path / "ds", "train", synthetic_rows, card_count=5)
    (folder / "data" / "train-00000-of-00001.parquet").rename(
        folder / "data" / "test-00000-of-00001.parquet"
    )
    with pytest.raises(data.DatasetError, match="no entry for split 'test'"):
        data.read_split(folder, "test")


def test_missing_shard_names_the_path(
    tmp_path: Path, synthetic_rows: list[dict], dataset_writer
) -> None:
    folder = dataset_writer(tmp_path / "ds", "test", synthetic_rows, card_count=None)
    with pytest.raises(data.DatasetError, match=r"validation-00000-of-00001\.parquet"):
        data.read_split(folder, "validation")


@pytest.mark.parametrize("revision", ["main", SHA[:12], SHA.upper(), SHA + "0"])
def test_revision_must_be_a_full_sha(revision: str) -> None:
    with pytest.raises(ValueError, match="40-hex-digit commit sha"):
        PeriapicalLesionsConfig(revision=revision)


def test_hub_loading_downloads_the_pinned_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, synthetic_rows: list[dict], dataset_writer
) -> None:
    snapshot = dataset_writer(tmp_path / "snapshot", "validation", synthetic_rows, card_count=5)
    calls: list[dict] = []

    def fake_snapshot_download(**kwargs: object) -> str:
        calls.append(kwargs)
        return str(snapshot)

    monkeypatch.setattr(data, "snapshot_download", fake_snapshot_download)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    config = PeriapicalLesionsConfig(dataset="someone/films", revision=SHA, split="validation")
    assert len(list(PeriapicalLesionsTaskset(config))) == 5
    (call,) = calls
    assert (call["repo_id"], call["repo_type"], call["revision"]) == (
        "someone/films",
        "dataset",
        SHA,
    )
    assert call["endpoint"] == "http://127.0.0.1:9"


@pytest.mark.parametrize(
    ("front", "problem"),
    [
        ("---\ndataset_info: [\n---\n", "does not parse"),
        ("---\nlicense: mit\n# card\n", "not closed"),
    ],
)
def test_a_broken_card_is_one_clear_error(tmp_path: Path, front: str, problem: str) -> None:
    card = tmp_path / "README.md"
    card.write_text(front, encoding="utf-8")
    with pytest.raises(data.DatasetError, match=problem):
        data.card_row_count(card, "test")
