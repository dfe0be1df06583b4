"""periapical-lesions-results on run folders it must refuse in one sentence, and on a mixed
run (some rollouts errored) that it must summarise over the scored ones only."""

import json
from pathlib import Path

import pytest
from periapical_lesions.results import main


def trace(film: str, reward: float | None, error: str | None = None) -> dict:
    errors = [{"type": "ProviderError", "message": error}] if error else []
    return {
        "ok": reward is not None,
        "rewards": {} if reward is None else {"reward": {"score": reward, "weight": 1.0}},
        "errors": errors,
        "task": {"data": {"film_id": film, "dataset_revision": "a" * 40}},
    }


def write_run(folder: Path, episodes: list[list[dict]] | str) -> Path:
    folder.mkdir()
    text = (
        episodes
        if isinstance(episodes, str)
        else "".join(json.dumps({"traces": traces}) + "\n" for traces in episodes)
    )
    (folder / "traces.jsonl").write_text(text)
    return folder


def test_mixed_run_counts_only_scored_rollouts(tmp_path: Path, capsys) -> None:
    run = write_run(
        tmp_path / "run",
        [[trace("00011", 1.0)], [trace("00141", 0.5)], [trace("00205", None, "down")]],
    )
    assert main([str(run)]) == 0
    out = capsys.readouterr().out
    assert "scored rollouts: 2 of 3" in out and "reward: 0.7500" in out
    assert "pass (reward = 1): 1 of 2" in out and f"dataset revision: {'a' * 40}" in out
    assert "errored: film 00205: ProviderError: down" in out


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (None, "no traces file"),
        ("not json\n", "line 1 is not an eval trace"),
        ('{"no": "traces"}\n', "line 1 is not an eval trace"),
        ("", "none of the 0 rollouts was scored"),
    ],
)
def test_unusable_run_folders_fail_in_one_sentence(
    tmp_path: Path, capsys, content: str | None, says: str
) -> None:
    run = tmp_path / "run"
    if content is not None:
        write_run(run, content)
    assert main([str(run)]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and says in captured.err


@pytest.mark.parametrize(
    ("pinned", "first_line"),
    [
        (False, f"dataset: UNPINNED, read at {'a' * 40}"),
        (True, f"dataset: pinned at {'a' * 40}"),
        (None, "dataset: read at"),
    ],
)
def test_the_first_line_says_whether_the_dataset_was_pinned(
    tmp_path: Path, capsys, pinned: bool | None, first_line: str
) -> None:
    traces = [trace("00011", 1.0), trace("00141", 0.5)]
    for made in traces:
        if pinned is not None:
            made["task"]["data"]["dataset_pinned"] = pinned
    assert main([str(write_run(tmp_path / "run", [traces]))]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith(first_line)


def test_a_local_build_is_named_as_such(tmp_path: Path, capsys) -> None:
    local = trace("00011", 1.0)
    local["task"]["data"] = {"film_id": "00011"}
    assert main([str(write_run(tmp_path / "run", [[local]]))]) == 0
    assert capsys.readouterr().out.startswith("dataset: a local build")
