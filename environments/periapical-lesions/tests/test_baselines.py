from pathlib import Path

import pytest
from periapical_lesions.baselines import main, policy_summary


def test_reference_passes_every_film(synthetic_dataset_dir: Path) -> None:
    summary = policy_summary(synthetic_dataset_dir, "test", "reference", resamples=500)
    assert {name: (i.mean, i.low, i.high) for name, i in summary.items()} == {
        name: (1.0, 1.0, 1.0) for name in summary
    }


def test_empty_passes_only_lesion_free_films(
    synthetic_dataset_dir: Path, synthetic_rows: list[dict]
) -> None:
    lesion_free = sum(not row["lesions"] for row in synthetic_rows) / len(synthetic_rows)
    summary = policy_summary(synthetic_dataset_dir, "test", "empty", resamples=500)
    assert summary["reward"].mean == pytest.approx(lesion_free)
    assert summary["pass rate (reward = 1.0)"].mean == pytest.approx(lesion_free)
    assert summary["reward"].low < summary["reward"].mean < summary["reward"].high


def test_two_fixed_boxes_fail_every_film(synthetic_dataset_dir: Path) -> None:
    summary = policy_summary(synthetic_dataset_dir, "test", "two-fixed-boxes", resamples=500)
    assert summary["reward"].mean == 0.0 and summary["pass rate (reward = 1.0)"].mean == 0.0


def test_command_prints_the_table(
    synthetic_dataset_dir: Path, capsys: pytest.CaptureFixture
) -> None:
    main(["--data-dir", str(synthetic_dataset_dir), "--policy", "empty", "--resamples", "200"])
    out = capsys.readouterr().out
    for needed in ("reward", "lesion_f1", "pai_f1", "pass rate (reward = 1.0)", "0.4000"):
        assert needed in out, needed
