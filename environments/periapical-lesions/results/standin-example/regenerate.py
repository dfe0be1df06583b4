"""Regenerate this stand-in example (not a model's result):

    .venv/bin/python environments/periapical-lesions/results/standin-example/regenerate.py

from the repository root. It runs the documented local command, vf-eval with
configs/periapical-lesions/eval-local.toml, against the tests' scripted model on 127.0.0.1
(a program that files fixed reports, not a language model) over the tests' five synthetic
films, then writes what `periapical-lesions-results` prints (summary.txt) and each rollout's
film, reference, filed report, reward and metrics (rollouts.jsonl), in film order.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[3]
sys.path.insert(0, str(ROOT / "environments" / "periapical-lesions"))

from tests.conftest import FILMS, film_rows, write_dataset  # noqa: E402
from tests.model_standin import model_standin  # noqa: E402

REPORTS = {
    "00011": {"lesions": [{"box": [0.58, 0.39, 0.60, 0.41], "pai": 3}]},
    "00141": {"lesions": [{"box": [0.68, 0.62, 0.72, 0.67], "pai": 3}]},
    "00205": {"lesions": []},
}
"""What the scripted model files: the reference; one of two lesions with the wrong grade;
an empty report on a lesion-free film. On the other two films it files nothing."""


def filing(report: dict) -> str:
    return f"printf '%s' '{json.dumps(report)}' > report.json && python3 radreport.py report.json"


def main() -> None:
    bin_dir = Path(sys.executable).parent
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        dataset = write_dataset(work / "dataset", "test", film_rows(), len(FILMS))
        with model_standin({film: filing(r) for film, r in REPORTS.items()}) as model:
            argv = [str(bin_dir / "vf-eval"), "@"]
            argv += [str(ROOT / "configs" / "periapical-lesions" / "eval-local.toml")]
            argv += ["-m", "standin/model", "-n", str(len(FILMS)), "-r", "1"]
            argv += ["--run.name", "standin-example", "--env.taskset.data_dir", str(dataset)]
            argv += ["--client.base_url", model.url, "--client.api_key_var", "STANDIN_API_KEY"]
            argv += ["--no-push", "--no-rich", "-o", str(work / "outputs")]
            env = {**os.environ, "STANDIN_API_KEY": "not-a-secret"}
            subprocess.run(argv, cwd=work, env=env, check=True, capture_output=True)
        run = work / "outputs" / "standin-example"
        summary = subprocess.run(
            [str(bin_dir / "periapical-lesions-results"), str(run)],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
        rows = []
        for line in (run / "traces.jsonl").read_text().splitlines():
            for trace in json.loads(line)["traces"]:
                data = trace["task"]["data"]
                rows.append(
                    {
                        "film_id": data["film_id"],
                        "reference": data["lesions"],
                        "report_status": trace["info"]["report_status"],
                        "report_lesions": trace["info"]["report_lesions"],
                        "reward": trace["rewards"]["reward"]["score"],
                        "metrics": trace["metrics"],
                    }
                )
    rows.sort(key=lambda row: row["film_id"])
    (HERE / "summary.txt").write_text(summary.stdout)
    (HERE / "rollouts.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))


if __name__ == "__main__":
    main()
