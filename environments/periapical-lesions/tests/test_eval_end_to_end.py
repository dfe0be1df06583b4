"""The documented local eval command, end to end: `vf-eval @
configs/periapical-lesions/eval-local.toml -m <model> -n .. -r 2` against a scripted
OpenAI-compatible model on 127.0.0.1, through verifiers' real rollout path (interception, the
bash harness's chat program, task setup, finalize, scoring) on the subprocess runtime, then
`periapical-lesions-results`. The shipped local config is used as it is, unedited."""

import json
import os
import subprocess
import sys
from pathlib import Path

from periapical_lesions.scoring import score

from .conftest import FILMS, film_rows, write_dataset
from .model_standin import model_standin

ROOT = Path(__file__).parents[3]
LOCAL_CONFIG = ROOT / "configs" / "periapical-lesions" / "eval-local.toml"
BIN = Path(sys.executable).parent
RUN_WATCHDOG_SECONDS = 900

REPORTS = {
    "00011": {"lesions": [{"box": [0.58, 0.39, 0.60, 0.41], "pai": 3}]},
    "00141": {"lesions": [{"box": [0.68, 0.62, 0.72, 0.67], "pai": 3}]},
}
"""What the scripted model files per film: the first is the reference, the second finds one
of two lesions with the wrong grade."""


def filing_command(report: dict) -> str:
    return f"printf '%s' '{json.dumps(report)}' > report.json && python3 radreport.py report.json"


def run_eval(tmp_path: Path, url: str, films: int) -> tuple[subprocess.CompletedProcess, Path]:
    dataset = write_dataset(tmp_path / "dataset", "test", film_rows(), len(FILMS))
    out = tmp_path / "outputs"
    argv = [str(BIN / "vf-eval"), "@", str(LOCAL_CONFIG)]
    argv += ["-m", "standin/model", "-n", str(films), "-r", "2", "--run.name", "e2e"]
    argv += ["--env.taskset.data_dir", str(dataset), "--client.base_url", url]
    argv += ["--client.api_key_var", "STANDIN_API_KEY", "--no-push", "--no-rich", "-o", str(out)]
    env = {**os.environ, "STANDIN_API_KEY": "not-a-secret"}
    result = subprocess.run(
        argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=RUN_WATCHDOG_SECONDS
    )
    return result, out / "e2e"


def results(run_dir: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(BIN / "periapical-lesions-results"), str(run_dir)], capture_output=True, text=True
    )


def agent_traces(run_dir: Path) -> list[dict]:
    lines = (run_dir / "traces.jsonl").read_text().splitlines()
    return [trace for line in lines for trace in json.loads(line)["traces"]]


def test_documented_eval_command_records_the_scorers_rewards(tmp_path: Path) -> None:
    commands = {film: filing_command(report) for film, report in REPORTS.items()}
    with model_standin(commands) as model:
        result, run_dir = run_eval(tmp_path, model.url, films=2)
    assert result.returncode == 0, result.stderr[-3000:]
    references = {row["film_id"]: row["lesions"] for row in film_rows()}
    expected = {film: score(references[film], REPORTS[film]) for film in REPORTS}
    assert expected["00011"].reward == 1.0 and 0.0 < expected["00141"].reward < 1.0
    traces = agent_traces(run_dir)
    assert sorted(t["task"]["data"]["film_id"] for t in traces) == ["00011"] * 2 + ["00141"] * 2
    for trace in traces:
        film = trace["task"]["data"]["film_id"]
        assert trace["ok"], trace["errors"]
        assert trace["rewards"] == {"reward": {"score": expected[film].reward, "weight": 1.0}}
        assert trace["metrics"] == expected[film].metrics()
        assert trace["info"]["report_status"].startswith("valid report with 1 lesion")
    summary = results(run_dir)
    assert summary.returncode == 0, summary.stderr
    mean = sum(s.reward for s in expected.values()) / 2
    assert "scored rollouts: 4 of 4" in summary.stdout and f"reward: {mean:.4f}" in summary.stdout


def test_a_run_whose_every_rollout_errored_does_not_pass_as_a_result(tmp_path: Path) -> None:
    with model_standin({}, failing=True) as model:
        result, run_dir = run_eval(tmp_path, model.url, films=1)
    # vf-eval 0.4.0 itself exits 0 here and logs reward 0.000 per rollout ...
    assert result.returncode == 0, result.stderr[-3000:]
    traces = agent_traces(run_dir)
    assert len(traces) == 2 and not any(t["ok"] for t in traces)
    # ... so the documented second step is what fails the run, in one sentence.
    summary = results(run_dir)
    assert summary.returncode == 1 and summary.stdout == ""
    assert summary.stderr.startswith("error: none of the 2 rollouts was scored")
    assert summary.stderr.count("\n") == 1 and "ProviderError" in summary.stderr
