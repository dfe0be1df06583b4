"""The agreement command scores one annotation against the other with the env's scorer."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from typer.testing import CliRunner

from curation.cli.app import app
from curation.publish.agreement import agreement

BOX = [0.1, 0.1, 0.3, 0.3]
FAR = [0.6, 0.6, 0.8, 0.8]


def write_pairs(build: Path, pairs: list[tuple[list, list]]) -> None:
    rows = [
        {
            "film_id": f"{i}",
            "other_film_id": f"{i}b",
            "distance": 0,
            "difference": 0.0,
            "lesions": a,
            "other_lesions": b,
        }
        for i, (a, b) in enumerate(pairs)
    ]
    build.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), build / "agreement.parquet")


def test_scores_pairs_with_the_environment_scorer(tmp_path: Path) -> None:
    same = ([{"box": BOX, "pai": 3}], [{"box": BOX, "pai": 3}])
    other_grade = ([{"box": BOX, "pai": 3}], [{"box": BOX, "pai": 5}])
    miss = ([{"box": BOX, "pai": 4}], [{"box": FAR, "pai": 4}])
    write_pairs(tmp_path, [same, other_grade, miss, same])
    result = agreement(tmp_path / "agreement.parquet", resamples=2000)
    assert result.pairs == 4
    assert result.reward.mean == (1.0 + 0.5 + 0.0 + 1.0) / 4
    assert result.pass_rate.mean == 0.5
    assert result.reward.low <= result.reward.mean <= result.reward.high
    output = CliRunner().invoke(app, ["agreement", "--build", str(tmp_path)]).output
    assert "reward 0.62" in output and "pass rate 50%" in output and "on 4" in output


def test_missing_file_is_one_clear_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["agreement", "--build", str(tmp_path)])
    assert result.exit_code == 2 and "agreement.parquet" in result.output
    assert result.output.strip().count("\n") == 0  # one plain line, no traceback
