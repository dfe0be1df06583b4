"""`dental-assistant-eval`: the published eval command, run locally through `vf-eval`.

The published README runs `prime eval run dental-assistant-agent -m M -n 12 -r 1
--env-args '{"max_turns":24}' --save-results`. prime 0.18.0 no longer evaluates locally
(it only starts hosted runs, which need a Prime login), and `vf-eval` spells the same
run differently. This command takes the published flags, runs `vf-eval` in this process
(any flag it does not know is handed on, e.g. `--client.base-url`), then reads the saved
rollouts back and says what they scored. It exits 1 when any rollout errored, so a run
in which every rollout failed can never pass for a result.
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path

import verifiers.v1 as vf
from pydantic import ValidationError

from dental_assistant_agent.environment import TASKSET_ID
from dental_assistant_agent.taskset import DentalAssistantConfig

PUBLISHED_IDS = (TASKSET_ID, f"karol/{TASKSET_ID}", f"karol/{TASKSET_ID}@1.0.0")
ENV_ARGS = ("seed", "split", "train_variants", "eval_variants", "max_turns")
TRACES_FILE = "traces.jsonl"


class UsageError(ValueError):
    """A bad command line, reported in one sentence."""


@dataclass(frozen=True)
class RunSummary:
    """What a finished run's saved rollouts say."""

    rollouts: int
    errored: int
    mean_reward: float | None
    first_error: str | None

    @property
    def ok(self) -> bool:
        return self.rollouts > 0 and self.errored == 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dental-assistant-eval",
        description="Evaluate a model on dental-assistant-agent locally (via vf-eval); "
        "flags not listed here are passed on to vf-eval.",
    )
    parser.add_argument("environment", nargs="?", default=TASKSET_ID)
    parser.add_argument("-m", "--model", required=True)
    parser.add_argument("-n", "--num-examples", type=int, help="cases to run (default all)")
    parser.add_argument("-r", "--rollouts-per-example", type=int, default=1)
    parser.add_argument("--env-args", default="{}", help="JSON object of environment options")
    parser.add_argument(
        "--save-results", action="store_true", help="accepted; results are always saved"
    )
    parser.add_argument("-o", "--output-dir", type=Path, default=Path("outputs"))
    parser.add_argument("--run-dir", help="run folder under the output dir (default: new)")
    parser.add_argument("--push", action="store_true", help="also upload to Prime (login)")
    return parser


def _env_flags(raw: str) -> list[str]:
    """`--env-args` as `vf-eval` flags, validated like the taskset validates them."""
    try:
        options = json.loads(raw)
    except ValueError:
        raise UsageError("--env-args must be a JSON object, e.g. '{\"max_turns\": 24}'") from None
    if not isinstance(options, dict):
        raise UsageError("--env-args must be a JSON object, e.g. '{\"max_turns\": 24}'")
    if unknown := sorted(set(options) - set(ENV_ARGS)):
        raise UsageError(f"--env-args: unknown option {unknown[0]!r}; known: {', '.join(ENV_ARGS)}")
    try:
        DentalAssistantConfig.model_validate(options)
    except ValidationError as error:
        problem = error.errors()[0]
        raise UsageError(f"--env-args: {problem['loc'][0]}: {problem['msg']}") from None
    flags = []
    for name, value in options.items():
        flags += [f"--env.taskset.{name.replace('_', '-')}", str(value)]
    return flags


def vf_eval_argv(argv: list[str]) -> tuple[list[str], Path]:
    """The `vf-eval` arguments for a published-style command line, and the run folder."""
    args, passthrough = _parser().parse_known_args(argv)
    if args.environment not in PUBLISHED_IDS:
        raise UsageError(
            f"unknown environment {args.environment!r}; this command runs {TASKSET_ID}"
        )
    run_dir = (
        args.run_dir or f"{TASKSET_ID}--{args.model.replace('/', '--')}--{uuid.uuid4().hex[:8]}"
    )
    flags = [TASKSET_ID, "-m", args.model, "-r", str(args.rollouts_per_example)]
    if args.num_examples is not None:
        flags += ["-n", str(args.num_examples)]
    flags += _env_flags(args.env_args)
    flags += ["-o", str(args.output_dir), "--run.dir", run_dir]
    flags += [] if args.push else ["--no-push"]
    return [*flags, *passthrough], args.output_dir / run_dir


def summarise(run: Path) -> RunSummary:
    """Count the rollouts saved in a run folder and the ones that errored."""
    path = run / TRACES_FILE
    episodes = (
        [vf.WireEpisode.model_validate_json(line) for line in path.read_text().splitlines()]
        if path.exists()
        else []
    )
    rewards, first_error, errored = [], None, 0
    for episode in episodes:
        errors = [*episode.errors, *(e for trace in episode.traces for e in trace.errors)]
        if not episode.ok or errors:
            errored += 1
            first_error = first_error or (errors[0].message if errors else "no trace")
        else:
            rewards.extend(trace.reward for trace in episode.traces)
    mean = sum(rewards) / len(rewards) if rewards else None
    return RunSummary(len(episodes), errored, mean, first_error)


def _report(summary: RunSummary, run: Path) -> str:
    where = f"results: {run / TRACES_FILE}"
    if summary.rollouts == 0:
        return f"no rollout was saved; nothing was evaluated ({where})"
    if summary.errored == summary.rollouts:
        return (
            f"every one of the {summary.rollouts} rollouts errored (first: "
            f"{summary.first_error[:200]}); no reward was measured ({where})"
        )
    line = f"{summary.rollouts} rollouts, mean reward {summary.mean_reward:.3f} over the "
    line += f"{summary.rollouts - summary.errored} that finished"
    if summary.errored:
        line += f"; {summary.errored} errored (first: {summary.first_error[:200]})"
    return f"{line} ({where})"


def main(argv: list[str] | None = None) -> None:
    try:
        flags, run = vf_eval_argv(sys.argv[1:] if argv is None else argv)
    except UsageError as error:
        raise SystemExit(f"dental-assistant-eval: {error}") from None
    (vf_eval,) = entry_points(group="console_scripts", name="vf-eval")
    vf_eval.load()(flags)
    summary = summarise(run)
    print(f"dental-assistant-eval: {_report(summary, run)}", file=sys.stderr)
    raise SystemExit(0 if summary.ok else 1)


if __name__ == "__main__":
    main()
