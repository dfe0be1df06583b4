"""End to end: the published eval command, as mapped here, through `vf-eval`'s real rollout
path (subprocess runtime, interception, the shared clinic tool server over MCP, `@stop`s,
rubric) against a scripted OpenAI-compatible endpoint on 127.0.0.1.

Both runs start at once (each spends most of its time bringing up the tool server).
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import verifiers.v1 as vf
from dental_assistant_agent.catalog import FAMILIES
from dental_assistant_agent.evaluate import UsageError, vf_eval_argv

BIN = Path(sys.executable).parent
PUBLISHED_FLAGS = ["-n", "12", "-r", "1", "--env-args", '{"max_turns":24}', "--save-results"]


def _closed_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _eval(base_url: str, out: Path, run: str, n: str = "12") -> subprocess.Popen:
    flags = [*PUBLISHED_FLAGS]
    flags[1] = n
    command = [str(BIN / "dental-assistant-eval"), "dental-assistant-agent", "-m", "reference"]
    command += [*flags, "--client.base-url", base_url, "-o", str(out), "--run-dir", run]
    command += ["--no-rich"]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """(exit code, stderr, run folder) of a good run and of a run whose model is unreachable."""
    out = tmp_path_factory.mktemp("eval")
    server = subprocess.Popen(
        [str(BIN / "dental-assistant-scripted-model")], stdout=subprocess.PIPE, text=True
    )
    try:
        base_url = server.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:"), base_url
        dead = f"http://127.0.0.1:{_closed_port()}/v1"
        jobs = {
            "good": _eval(base_url, out, "good"),
            "dead": _eval(dead, out, "dead", n="2"),
        }
        results = {}
        for name, job in jobs.items():
            _, stderr = job.communicate(timeout=900)
            results[name] = (job.returncode, stderr, out / name)
        return results
    finally:
        server.terminate()
        server.wait(timeout=30)


def _episodes(run: Path) -> list[vf.WireEpisode]:
    lines = (run / "traces.jsonl").read_text().splitlines()
    return [vf.WireEpisode.model_validate_json(line) for line in lines]


def test_published_command_scores_the_first_12_held_out_cases(runs):
    code, stderr, run = runs["good"]
    assert code == 0, stderr[-2000:]
    episodes = _episodes(run)
    traces = [trace for episode in episodes for trace in episode.traces]
    assert sorted(trace.task.data.id for trace in traces) == sorted(
        f"eval-{family.name}-000" for family in FAMILIES
    )
    for trace in traces:
        assert trace.reward == 1.0, (trace.task.data.id, trace.errors)
        assert trace.metrics == {
            "safety": 1.0,
            "handoff": 1.0,
            "history": 1.0,
            "pathway": 1.0,
            "guidance": 1.0,
        }
        assert trace.stop_condition == "handoff_submitted"
    saved = json.loads((run / "configs" / "resolved" / "eval.json").read_text())
    assert saved["env"]["taskset"]["max_turns"] == 24
    assert saved["env"]["agent"]["runtime"]["type"] == "subprocess"
    assert "12 rollouts, mean reward 1.000" in stderr


def test_a_run_whose_every_rollout_errored_fails(runs):
    code, stderr, run = runs["dead"]
    episodes = _episodes(run)
    assert len(episodes) == 2 and not any(episode.ok for episode in episodes)
    assert code == 1
    assert "every one of the 2 rollouts errored" in stderr
    assert "no reward was measured" in stderr


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (["gsm8k", "-m", "x"], "unknown environment"),
        (["-m", "x", "--env-args", "[24]"], "JSON object"),
        (["-m", "x", "--env-args", '{"max_turn": 24}'], "unknown option 'max_turn'"),
        (["-m", "x", "--env-args", '{"max_turns": 1}'], "max_turns"),
    ],
)
def test_bad_command_lines_are_refused_in_one_sentence(argv, problem):
    with pytest.raises(UsageError, match=problem):
        vf_eval_argv(argv)


def test_published_flags_map_onto_vf_eval():
    flags, run = vf_eval_argv(
        ["karol/dental-assistant-agent@1.0.0", "-m", "m", *PUBLISHED_FLAGS, "--run-dir", "r"]
    )
    assert flags == [
        "dental-assistant-agent",
        *("-m", "m", "-r", "1", "-n", "12", "--env.taskset.max-turns", "24"),
        *("-o", "outputs", "--run.dir", "r", "--no-push"),
    ]
    assert run == Path("outputs") / "r"
