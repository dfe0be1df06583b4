"""The pinned path end to end: `pericurate push` publishes a sample build to the loopback Hub
stand-in and writes the pin into the environment's pinned.py; then the environment, run by
vf-eval with the shipped local config and no revision option, reads its tasks at that pin
from the stand-in, even after the Hub's main branch has moved, and its traces and results
say "pinned". The unpinned path says UNPINNED on the same run's results instead."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from curation.cli.app import app
from curation.push.hub import ENV_PACKAGE, EVAL_CONFIG, PINNED_FILE
from tests.hub_standin import WRITE_TOKEN, HubStandIn, hub_standin, pushable_copy

__all__ = ["hub_standin"]
PROJECT = Path(__file__).resolve().parents[2]
LOCAL_CONFIG = Path("configs/periapical-lesions/eval-local.toml")
REPO = "curator/periapical-pinned"
BIN = Path(sys.executable).parent
RUN_WATCHDOG_SECONDS = 900


def _model_standin():
    """The environment tests' scripted OpenAI-compatible model, loaded from its file."""
    path = PROJECT / ENV_PACKAGE / "tests" / "model_standin.py"
    spec = importlib.util.spec_from_file_location("periapical_model_standin", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module.model_standin


@pytest.fixture
def root(sample_build: Path, tmp_path: Path, hub_standin: HubStandIn, monkeypatch) -> Path:
    """A copy of the project's pin files and of the environment package, pushed from the
    sample build to the stand-in with the write token."""
    root = tmp_path / "root"
    shutil.copytree(
        PROJECT / ENV_PACKAGE / "periapical_lesions",
        root / ENV_PACKAGE / "periapical_lesions",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    for relative in (EVAL_CONFIG, LOCAL_CONFIG):
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(PROJECT / relative, root / relative)
    build, lock = pushable_copy(sample_build, tmp_path)
    monkeypatch.setenv("HF_TOKEN", WRITE_TOKEN)
    monkeypatch.setenv("HF_ENDPOINT", hub_standin.url)
    args = ["push", "--repo", REPO, "--build", str(build), "--lock", str(lock)]
    args += ["--repo-root", str(root), "--no-build-env", "--allow-synthetic"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return root


def run_eval(root: Path, hub: HubStandIn, tmp_path: Path, *options: str):
    """vf-eval with the local config against the scripted model, importing the environment
    from `root` (its pinned.py as push wrote it) and reading the Hub stand-in."""
    out = tmp_path / "outputs"
    argv = [str(BIN / "vf-eval"), "@", str(root / LOCAL_CONFIG), "-m", "standin/model"]
    argv += ["-n", "2", "-r", "1", "--run.name", "pinned", "--env.taskset.dataset", REPO]
    argv += ["--client.api_key_var", "STANDIN_API_KEY", "--no-push", "--no-rich", "-o", str(out)]
    env = {
        **os.environ,
        "PYTHONPATH": str(root / ENV_PACKAGE),
        "HF_ENDPOINT": hub.url,
        "HF_HUB_CACHE": str(tmp_path / "hub-cache"),
        "STANDIN_API_KEY": "not-a-secret",
    }
    env.pop("HF_TOKEN", None)
    with _model_standin()({}) as model:
        argv += ["--client.base_url", model.url, *options]
        result = subprocess.run(
            argv, cwd=tmp_path, env=env, capture_output=True, text=True,
            timeout=RUN_WATCHDOG_SECONDS,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    lines = (out / "pinned" / "traces.jsonl").read_text().splitlines()
    traces = [trace for line in lines for trace in json.loads(line)["traces"]]
    summary = subprocess.run(
        [str(BIN / "periapical-lesions-results"), str(out / "pinned")],
        capture_output=True, text=True,
    )  # fmt: skip
    return result, traces, summary


def pinned_sha(root: Path) -> str:
    namespace: dict = {}
    exec((root / PINNED_FILE).read_text(), namespace)
    return namespace["REVISION"]


def test_a_run_reads_the_pushed_pin_after_the_branch_moves(
    root: Path, hub_standin: HubStandIn, tmp_path: Path
) -> None:
    sha = pinned_sha(root)
    repo = hub_standin.repos[REPO]
    assert repo.branches["main"] == sha
    moved = repo.commit(sha, "someone else", {"README.md": b"---\n---\nmoved\n"})
    repo.branches["main"] = moved.sha
    result, traces, summary = run_eval(root, hub_standin, tmp_path)
    assert "UNPINNED" not in result.stderr
    assert len(traces) == 2 and all(t["ok"] for t in traces)
    assert {t["task"]["data"]["dataset_revision"] for t in traces} == {sha}
    assert {t["task"]["data"]["dataset_pinned"] for t in traces} == {True}
    shard = pq.read_table(
        tmp_path / "hub-cache" / f"datasets--{REPO.replace('/', '--')}" / "snapshots" / sha
        / "data" / "test-00000-of-00001.parquet"
    )  # fmt: skip
    films = sorted(t["task"]["data"]["film_id"] for t in traces)
    assert films == sorted(shard.column("film_id")[:2].to_pylist())
    assert any(f"/resolve/{sha}/data/test-" in r for r in hub_standin.requests)
    assert not any(f"/resolve/{moved.sha}/" in r for r in hub_standin.requests)
    assert summary.returncode == 0 and summary.stdout.startswith(f"dataset: pinned at {sha}")


def test_an_unpinned_run_says_so_first(root: Path, hub_standin: HubStandIn, tmp_path: Path) -> None:
    head = hub_standin.repos[REPO].branches["main"]
    pin = root / PINNED_FILE
    pin.write_text(pin.read_text().replace(f'REVISION: str | None = "{head}"', "REVISION = None"))
    assert pinned_sha(root) is None
    result, traces, summary = run_eval(root, hub_standin, tmp_path)
    lines = result.stderr.splitlines()
    assert lines[0].startswith("periapical-lesions: UNPINNED dataset: no revision of")
    unpinned = [line for line in lines if "UNPINNED" in line]
    assert len(unpinned) == 2 and f"at {head}, the commit its main branch" in unpinned[1]
    assert {t["task"]["data"]["dataset_pinned"] for t in traces} == {False}
    assert {t["task"]["data"]["dataset_revision"] for t in traces} == {head}
    assert summary.stdout.startswith(f"dataset: UNPINNED, read at {head}")
