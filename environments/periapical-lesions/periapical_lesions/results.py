"""Summarise an eval run, and fail when it scored nothing.

    periapical-lesions-results outputs/<run name>

`vf-eval` exits 0 even when every rollout errored (the model endpoint down, the sandbox
image missing), and its log then shows reward 0.000 for each, which reads like a real score.
This reads the run's traces.jsonl and prints the reward over the rollouts that were scored
(mean with a 95% bootstrap interval), the pass rate, the errored rollouts with their errors,
and the dataset revision the tasks came from. Exit status 1 when the run has no scored
rollout, so `vf-eval ... && periapical-lesions-results ...` fails as a whole.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from periapical_lesions.scoring import bootstrap_ci

TRACES_FILE = "traces.jsonl"


class RunError(ValueError):
    """The run folder cannot be summarised; the message is one sentence for the user."""


@dataclass(frozen=True)
class Rollout:
    film: str
    reward: float | None
    """None when the rollout errored before it was scored."""
    error: str | None
    revision: str | None
    pinned: bool | None = None
    """Whether the task's dataset commit was pinned; None for a local build (or an older
    trace that does not say)."""


def rollout_from(trace: dict) -> Rollout:
    """One agent trace as vf-eval writes it: `rewards` maps each reward to its score and
    weight (None when scoring did not run); the total is their weighted sum."""
    data = trace.get("task", {}).get("data", {})
    errors = trace.get("errors") or []
    rewards = trace.get("rewards") or {}
    scored = bool(trace.get("ok")) and not errors and bool(rewards)
    scored = scored and all(r is not None for r in rewards.values())
    error = "; ".join(f"{e.get('type')}: {e.get('message')}" for e in errors) or "not scored"
    return Rollout(
        film=str(data.get("film_id")),
        reward=sum(r["score"] * r.get("weight", 1.0) for r in rewards.values()) if scored else None,
        error=None if scored else error,
        revision=data.get("dataset_revision"),
        pinned=data.get("dataset_pinned"),
    )


def read_rollouts(run_dir: Path) -> list[Rollout]:
    path = run_dir / TRACES_FILE
    if not path.is_file():
        raise RunError(f"{path}: no traces file; pass the run folder vf-eval printed.")
    rollouts = []
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            try:
                episode = json.loads(line)
                rollouts += [rollout_from(trace) for trace in episode["traces"]]
            except (ValueError, KeyError, TypeError, AttributeError) as error:
                raise RunError(f"{path}: line {number} is not an eval trace ({error!r}).") from None
    return rollouts


def summary(rollouts: list[Rollout]) -> list[str]:
    """The lines to print; raises RunError when nothing was scored."""
    scored = [r.reward for r in rollouts if r.reward is not None]
    errored = [r for r in rollouts if r.reward is None]
    if not scored:
        causes = Counter(r.error for r in errored).most_common(1)
        cause = f" (first cause: {causes[0][0]})" if causes else ""
        raise RunError(
            f"none of the {len(rollouts)} rollouts was scored, so this run has no result{cause}."
        )
    interval = bootstrap_ci(scored)
    passed = sum(reward == 1.0 for reward in scored)
    revisions = sorted({r.revision for r in rollouts if r.revision})
    lines = [
        dataset_line(rollouts, revisions),
        f"scored rollouts: {len(scored)} of {len(rollouts)}",
        f"reward: {interval.mean:.4f} (95% CI {interval.low:.4f}-{interval.high:.4f})",
        f"pass (reward = 1): {passed} of {len(scored)}",
        f"dataset revision: {', '.join(revisions) or 'not recorded'}",
    ]
    lines += [f"errored: film {r.film}: {r.error}" for r in errored]
    return lines


def dataset_line(rollouts: list[Rollout], revisions: list[str]) -> str:
    """First line of the summary: which data the run scored against, and loudly so when the
    dataset was not pinned (the main branch's commit at load time, which can move)."""
    if any(r.pinned is False for r in rollouts):
        return (
            f"dataset: UNPINNED, read at {', '.join(revisions)} (the main branch's commit when "
            "the run loaded); rerun with --env.taskset.revision <sha> to reproduce it"
        )
    if revisions and all(r.pinned for r in rollouts):
        return f"dataset: pinned at {', '.join(revisions)}"
    if revisions:
        return f"dataset: read at {', '.join(revisions)} (the traces do not say if pinned)"
    return "dataset: a local build (--env.taskset.data_dir), not a Hub revision"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: periapical-lesions-results RUN_DIR", file=sys.stderr)
        return 2
    try:
        lines = summary(read_rollouts(Path(args[0])))
    except RunError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
