"""Reading a split of the published dataset, from a local build or a pinned Hub snapshot.

A dataset folder holds `data/{split}-00000-of-00001.parquet` and, usually, the dataset card
`README.md`, whose `dataset_info.splits` row counts the split is checked against. The Hub path
downloads a snapshot at an exact commit: plain `load_dataset(repo, revision=...)` would fall
back to the latest cached copy offline and silently ignore the revision.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pyarrow.parquet as pq
import yaml
from huggingface_hub import DatasetCard, HfApi, snapshot_download
from huggingface_hub.errors import HfHubHTTPError


class DatasetError(ValueError):
    """The dataset folder or its card is not what the environment expects."""


@dataclass(frozen=True)
class Film:
    film_id: str
    image: bytes
    width: int
    height: int
    lesions: list[dict]
    referral_text: str


def shard_path(folder: Path, split: str) -> Path:
    return folder / "data" / f"{split}-00000-of-00001.parquet"


def card_row_count(card: Path, split: str) -> int | None:
    """The split's `num_examples` in the card's `dataset_info` (read with huggingface_hub's
    `DatasetCard`); None when the card gives no split counts at all."""
    try:
        loaded = DatasetCard.load(card)
    except (ValueError, yaml.YAMLError) as error:
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise DatasetError(f"{card}: YAML front matter does not parse: {reason}") from None
    if loaded.text.lstrip().startswith("---"):  # a block opened at the top and never closed
        raise DatasetError(f"{card}: YAML front matter is not closed by a '---' line")
    infos = loaded.data.get("dataset_info")
    infos = infos if isinstance(infos, list) else [infos] if isinstance(infos, dict) else []
    splits = [row for info in infos for row in info.get("splits") or []]
    if not splits:
        return None
    counts = [row.get("num_examples") for row in splits if row.get("name") == split]
    if not counts:
        raise DatasetError(f"{card}: dataset_info.splits has no entry for split {split!r}")
    return int(counts[0])


def read_split(folder: Path, split: str) -> list[Film]:
    """Every film of `split` in a dataset folder, in stored order."""
    path = shard_path(folder, split)
    if not path.is_file():
        raise DatasetError(f"{path}: no parquet shard for split {split!r}")
    rows = pq.read_table(path).to_pylist()
    card = folder / "README.md"
    if card.is_file():
        expected = card_row_count(card, split)
        if expected is not None and expected != len(rows):
            raise DatasetError(
                f"{path}: holds {len(rows)} rows but the dataset card {card} says split "
                f"{split!r} has {expected}"
            )
    try:
        return [
            Film(
                film_id=row["film_id"],
                image=row["image"]["bytes"],
                width=row["width"],
                height=row["height"],
                lesions=[
                    {"box": [float(v) for v in lesion["box"]], "pai": int(lesion["pai"])}
                    for lesion in row["lesions"]
                ],
                referral_text=row["referral"]["text"],
            )
            for row in rows
        ]
    except (KeyError, TypeError) as error:
        raise DatasetError(
            f"{path}: a row does not follow the dataset schema: {error!r}"
        ) from error


def current_revision(dataset: str) -> str:
    """The commit the dataset's main branch points at now, asked of the Hub once."""
    endpoint = os.environ.get("HF_ENDPOINT") or None
    try:
        sha = HfApi(endpoint=endpoint).dataset_info(dataset, revision="main").sha
    except (HfHubHTTPError, httpx2.HTTPError, OSError) as error:  # httpx2: the client's transport
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise DatasetError(
            f"Cannot find the current revision of {dataset} at "
            f"{endpoint or 'the Hugging Face Hub'} ({reason}), so pin one with "
            "revision=<40-hex commit sha> or pass data_dir=<local dataset build>."
        ) from None
    if sha is None:
        raise DatasetError(f"The Hub gave no commit sha for {dataset}, so pin a revision.")
    return sha


def hub_snapshot(dataset: str, revision: str, split: str) -> Path:
    """Download (or reuse from cache) the split's shard and the card at exactly `revision`.
    The endpoint is read from HF_ENDPOINT at call time, not only at import."""
    folder = snapshot_download(
        repo_id=dataset,
        repo_type="dataset",
        revision=revision,
        allow_patterns=[f"data/{split}-*", "README.md"],
        endpoint=os.environ.get("HF_ENDPOINT") or None,
    )
    return Path(folder)
