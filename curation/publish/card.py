"""The dataset card (``README.md``), rendered from a build and never written by hand: every
figure in it is read from ``curation.json``, the parquet shards and ``agreement.parquet``,
so the card cannot drift from the data it describes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib.resources import as_file, files
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cards.licenses import license_texts
from curation.core.atomic import write_bytes
from curation.core.errors import PericurateError
from curation.core.vocabulary import Reason
from curation.decisions import recorded_decisions
from curation.publish.agreement import AGREEMENT_FILE, agreement, describe
from curation.publish.schema import SPLITS, features, shard_name
from curation.publish.summary import Summary, SummaryError
from splits.figures import STAT_NAMES

if TYPE_CHECKING:
    from huggingface_hub import DatasetCardData

PRETTY_NAME = "Periapical lesions with PAI grades (leakage-free splits)"
SIZE_CATEGORIES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"))
TEMPLATE = "templates/card.md"  # package data of ``cards``
# Characters that would end a markdown line (or are invisible) inside a value shown in the card.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
SYNTHETIC_NOTE = (
    "**This build was made from the synthetic sample source, not from the real archive: its "
    "figures say nothing about the real data.**"
)


class CardError(PericurateError):
    """The build lacks what the card is made from."""


@dataclass(frozen=True)
class SplitFile:
    """A split's shard: rows, size of its Arrow data (the Hub's ``num_bytes``, what
    ``datasets`` records when it loads the split) and size of the file (what is downloaded)."""

    name: str
    rows: int
    bytes: int
    file_bytes: int


def read_summary(build: Path) -> Summary:
    """The build's ``curation.json``; a ``CardError`` when it is missing or not one."""
    try:
        return Summary.load(build / "curation.json")
    except SummaryError as error:
        raise CardError(str(error)) from None


def split_files(build: Path) -> list[SplitFile]:
    """Each split's shard: rows, Arrow size and file size (pyarrow imported only here)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    files = []
    for split in SPLITS:
        path = build / "dataset" / "data" / shard_name(split)
        if not path.is_file():
            raise CardError(f"{path}: the split shard is missing; run `pericurate build`.")
        try:
            shard = pq.ParquetFile(path)
            groups = range(shard.num_row_groups)  # a row group at a time: memory stays bounded
            arrow_bytes = sum(shard.read_row_group(i).nbytes for i in groups)
        except (OSError, pa.ArrowException) as error:
            raise CardError(
                f"{path}: not a readable parquet shard ({type(error).__name__}); "
                "run `pericurate build`."
            ) from None
        files.append(SplitFile(split, shard.metadata.num_rows, arrow_bytes, path.stat().st_size))
    return files


def _size_category(films: int) -> str:
    return next((name for limit, name in SIZE_CATEGORIES if films < limit), "100K<n<1M")


def card_data(summary: Summary, files: list[SplitFile]) -> DatasetCardData:
    """The card's metadata, with ``dataset_info`` filled in by ``datasets`` itself."""
    import datasets
    from datasets.info import DatasetInfosDict
    from huggingface_hub import DatasetCardData

    data = DatasetCardData(
        license="cc-by-4.0",
        pretty_name=PRETTY_NAME,
        task_categories=["object-detection"],
        tags=["medical", "dental", "radiology", "panoramic-radiograph", "periapical-lesion"],
        size_categories=[_size_category(sum(f.rows for f in files))],
        source_datasets=[f"https://doi.org/{summary.source.doi}"],
        configs=[
            {
                "config_name": "default",
                "data_files": [
                    {"split": f.name, "path": f"data/{f.name}-*.parquet"} for f in files
                ],
            }
        ],
    )
    splits = datasets.SplitDict()
    for f in files:
        splits.add(datasets.SplitInfo(name=f.name, num_bytes=f.bytes, num_examples=f.rows))
    info = datasets.DatasetInfo(
        features=features(),
        splits=splits,
        download_size=sum(f.file_bytes for f in files),
        dataset_size=sum(f.bytes for f in files),
    )
    DatasetInfosDict({"default": info}).to_dataset_card_data(data)
    return data


def code_span(text: str) -> str:
    """``text`` as one inline markdown code span, whatever it holds: control characters (a
    newline would end the line, the list item or a table row) become U+FFFD, and the fence is
    one backtick longer than any run of backticks inside, so nothing in it is read as
    markdown, a link or HTML."""
    flat = _CONTROL.sub("\ufffd", text)
    fence = "`" * (max(map(len, re.findall("`+", flat)), default=0) + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    return f"{fence}{pad}{flat}{pad}{fence}"


def card_values(summary: Summary, agreement_line: str, revision: str | None) -> dict[str, Any]:
    """The variables of ``templates/card.md``: numbers, the toolkit's own sentences, and the
    texts it does not vouch for (film ids, the hash version, the salt, the revision) as code
    spans."""
    source, params, counts = summary.source, summary.flat_settings(), summary.counts
    largest = counts.largest_clusters[0] if counts.largest_clusters else None
    among = counts.files("image", "dropped", Reason.augmented_copy_among_originals)
    return {
        "synthetic_note": SYNTHETIC_NOTE if source.synthetic else "",
        "citation": source.citation.rsplit(" doi:", 1)[0],
        "doi": source.doi,
        "source_license": source.license,
        "archive_sha256": code_span(str(source.archive_sha256)),
        "archive_size": source.archive_size,
        "hash_version": code_span(summary.hash_version),
        "source_files": counts.source_files,
        "rejected": counts.by_kind_and_fate.get("image/rejected", 0),
        "augmented_copies": counts.files("image", "dropped", Reason.augmented_copy),
        "same_picture_distance": params.same_picture_distance,
        "same_picture_groups": counts.same_picture_groups,
        "copies_among_originals": among,
        "refilings": counts.files("image", "dropped", Reason.refiling),
        "agreement_pairs": counts.agreement_pairs,
        "lookalike_distance": params.lookalike_distance,
        "lookalike_edges": counts.lookalike_edges,
        "lookalike_edges_turned": counts.lookalike_edges_turned,
        "patient_links": counts.patient_links,
        "clusters": counts.clusters,
        "multi_film_clusters": counts.multi_film_clusters,
        "largest_cluster": code_span(largest.cluster_id) if largest else "",
        "largest_films": largest.films if largest else 0,
        "verified_visits": counts.verified_visits,
        "visits_across_splits": counts.visits_across_splits,
        "link_visits": params.link_visits,
        "fractions": list(params.fractions),
        "seed": params.seed,
        "kept": counts.by_kind_and_fate.get("image/kept", 0),
        "splits": [
            (split, [getattr(summary.splits[split], name) for name in STAT_NAMES])
            for split in SPLITS
        ],
        "referral_salt": code_span(params.referral_salt),
        "agreement": agreement_line,
        "revision": code_span(revision) if revision else "",
        "decisions": [code_span(d.sentence()) for d in recorded_decisions(summary.decisions)],
        "decisions_sha256": code_span((summary.decisions or {}).get("sha256", "")),
    }


def render_card(build: Path, revision: str | None = None) -> str:
    """The whole README.md text for ``build``: ``templates/card.md`` filled by huggingface_hub's
    ``DatasetCard.from_template``, which also checks the metadata (the heavy libraries are
    imported only when a card is made, so a ``card`` with nothing to do starts without them)."""
    from huggingface_hub import DatasetCard

    summary = read_summary(build)
    data = card_data(summary, split_files(build))
    line = describe(agreement(build / AGREEMENT_FILE))
    values = card_values(summary, line, revision)
    with as_file(files("cards").joinpath(TEMPLATE)) as template:
        card = DatasetCard.from_template(data, template_path=str(template), **values)
    return str(card)


def write_card(build: Path, revision: str | None = None) -> Path:
    """README.md plus the LICENSE and NOTICE files into ``build/dataset``."""
    source = read_summary(build).source
    dataset_dir = build / "dataset"
    card = dataset_dir / "README.md"
    write_bytes(card, render_card(build, revision).encode("utf-8"))
    write_license_files(dataset_dir, source.citation, source.doi)
    return card


def write_license_files(dataset_dir: Path, citation: str, doi: str) -> list[Path]:
    """LICENSE and NOTICE beside the card; returns the paths written."""
    paths = []
    for name, text in license_texts(citation, doi).items():
        write_bytes(dataset_dir / name, text.encode("utf-8"))
        paths.append(dataset_dir / name)
    return paths
