"""Score a reference policy over a split of a local dataset build.

python -m periapical_lesions.baselines --data-dir DIR --split test --policy empty
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.table import Table

from periapical_lesions.data import read_split
from periapical_lesions.policies import POLICIES
from periapical_lesions.scoring import Interval, bootstrap_ci, score

SPLITS = ("train", "validation", "test")


def policy_summary(
    data_dir: Path, split: str, policy: str, seed: int = 0, resamples: int = 10_000
) -> dict[str, Interval]:
    """Mean and 95% bootstrap interval of each per-film figure; pass = reward exactly 1.0."""
    act = POLICIES[policy]
    scores = [score(film.lesions, act(film.lesions)) for film in read_split(data_dir, split)]
    columns = {
        "reward": [s.reward for s in scores],
        "lesion_f1": [s.lesion_f1 for s in scores],
        "pai_f1": [s.pai_f1 for s in scores],
        "pass rate (reward = 1.0)": [float(s.reward == 1.0) for s in scores],
    }
    return {name: bootstrap_ci(values, seed, resamples) for name, values in columns.items()}


def summary_table(title: str, summary: dict[str, Interval]) -> Table:
    table = Table(title=title)
    for column in ("figure", "mean", "95% CI low", "95% CI high"):
        table.add_column(column, justify="left" if column == "figure" else "right")
    for name, interval in summary.items():
        table.add_row(name, f"{interval.mean:.4f}", f"{interval.low:.4f}", f"{interval.high:.4f}")
    return table


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True, help="local dataset build")
    parser.add_argument("--split", choices=SPLITS, default="test")
    parser.add_argument("--policy", choices=sorted(POLICIES), default="reference")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    parser.add_argument("--resamples", type=int, default=10_000, help="bootstrap resamples")
    args = parser.parse_args(argv)
    summary = policy_summary(args.data_dir, args.split, args.policy, args.seed, args.resamples)
    title = f"policy {args.policy} on {args.split} ({args.data_dir}); 95% percentile bootstrap"
    Console().print(summary_table(title, summary))


if __name__ == "__main__":
    main()
