"""The dataset card (``README.md``), rendered from a build and never written by hand: every
figure in it is read from ``curation.json``, the parquet shards and ``agreement.parquet``,
so the card cannot drift from the data it describes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cards.licenses import write_license_files
from curation.core.atomic import write_bytes
from curation.core.errors import PericurateError
from curation.publish.agreement import AGREEMENT_FILE, agreement, describe
from curation.publish.schema import SPLITS, features, shard_name
from curation.publish.summary import Summary, SummaryError
from splits.figures import STAT_NAMES

if TYPE_CHECKING:
    from huggingface_hub import DatasetCardData

PRETTY_NAME = "Periapical lesions with PAI grades (leakage-free splits)"
SIZE_CATEGORIES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"))
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


def _visits_line(summary: Summary) -> str:
    """Step 4's visits of one patient: verified by local features, joined or only counted."""
    counts, linked = summary.counts, summary.setting("lookalikes", "link_visits")
    found = (
        f"Visits of one patient verified by local features (ORB matches under one affine "
        f"transform fitted by MAGSAC): {counts.verified_visits} pairs of kept films"
    )
    if linked:
        return found + ", joined into the components (`--link-visits`)."
    return found + (
        f", not joined (built without `--link-visits`): {counts.visits_across_splits} of "
        "them cross splits."
    )


def _visits_limit(summary: Summary) -> str:
    """The patient limit, as this build's visits setting leaves it."""
    counts = summary.counts
    if summary.setting("lookalikes", "link_visits"):
        return (
            "visits verified by local features were joined (`--link-visits`), but two films "
            "of one patient that neither look alike nor match by features can still fall in "
            "different splits."
        )
    return (
        "two films of one patient that do not look alike can fall in different splits; "
        f"{counts.visits_across_splits} pairs verified as visits of one patient by local "
        "features do (build with `--link-visits` to keep them together)."
    )


def _splits_table(summary: Summary) -> str:
    lines = [
        "| split | films | lesions | PAI 3 | PAI 4 | PAI 5 | lesion-free films |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for split in SPLITS:
        figures = summary.splits[split]
        cells = " | ".join(str(getattr(figures, name)) for name in STAT_NAMES)
        lines.append(f"| {split} | {cells} |")
    return "\n".join(lines)


def body(summary: Summary, agreement_line: str, revision: str | None) -> str:
    source, params, counts = summary.source, summary.flat_settings(), summary.counts
    kept = counts.by_kind_and_fate.get("image/kept", 0)
    rejected = counts.by_kind_and_fate.get("image/rejected", 0)
    largest = counts.largest_clusters[0] if counts.largest_clusters else None
    largest_text = f"`{largest.cluster_id}` with {largest.films} films" if largest else "none"
    synthetic = f"\n{SYNTHETIC_NOTE}\n" if source.synthetic else ""
    pin = (
        f"The periapical-lesions environment is pinned to commit `{revision}` of this "
        "dataset; load exactly that revision."
        if revision
        else "The periapical-lesions environment pins the commit `pericurate push` made for "
        "this card; the push tags it and records its sha in the environment."
    )
    return f"""
# {PRETTY_NAME}
{synthetic}
Panoramic dental radiographs, one row per original film, with every periapical lesion boxed
and graded on the Periapical Index (PAI 3, 4 or 5). It is made to benchmark models and
agents that read a pantomograph and report its periapical lesions, with train, validation
and test splits that share no film and no look-alike of a film.

## Source

{source.citation.rsplit(" doi:", 1)[0]} DOI: [{source.doi}](https://doi.org/{source.doi}),
licensed {source.license}. Archive sha256 `{source.archive_sha256}`
({source.archive_size} bytes).

## How it was made

Every step is recorded in `curation.json`; the curation code is `pericurate` (hash
`{summary.hash_version}`).

1. Index all {counts.source_files} source files; {rejected} images that cannot be used
   (no annotation, undecodable, duplicate stems, ...) were rejected with a reason.
2. Keep original films only: {
        counts.files("image", "dropped", "augmented copy")
        - counts.files("image", "dropped", "augmented copy among")
    } augmented copies were
   dropped by folder and name.
3. Hash each film (512-bit average hash, in every orientation), confirm same-picture
   candidates (Hamming distance <= {params.same_picture_distance} in some orientation) in
   pixels after removing exposure differences, and keep one film of each same-picture group,
   chosen by evidence from the files: {counts.same_picture_groups} groups;
   {counts.files("image", "dropped", "augmented copy among")} copies filed among the
   originals and {counts.files("image", "dropped", "near-identical")} re-filings were
   dropped ({counts.agreement_pairs} pairs of one radiograph filed twice feed the agreement
   figure).
4. Join films at Hamming distance <= {params.lookalike_distance} in any orientation (a
   superset of "within {params.lookalike_distance} bits": a turned copy stays with its
   original), and films naming one patient number, into look-alike components:
   {counts.lookalike_edges} hash links ({counts.lookalike_edges_turned} only in a turned
   orientation), {counts.patient_links} patient links,
   {counts.clusters} components
   ({counts.multi_film_clusters} with more than one film); the largest is {largest_text}.
   {_visits_line(summary)}
5. Assign whole components to splits with fractions {list(params.fractions)} and seed
   {params.seed}: {kept} original films kept.

## Splits

{_splits_table(summary)}

## Fields

- `film_id`: the source file stem (leading zeros kept).
- `image`: the source JPEG, not re-encoded, without comments, EXIF or other text segments
  (the pixels are the source's exactly); `width`, `height`: its true pixel size.
- `lesions`: a list of `{{"box": [x1, y1, x2, y2], "pai": 3 | 4 | 5}}`. Box corners are
  fractions of the image width and height measured from the top-left corner, with `x1 < x2`
  and `y1 < y2`. PAI 1 and 2 are not lesions and do not appear.
- `referral`: `patient_code`, `age`, `sex`, `reason` and the rendered slip `text`.
- `cluster_id`: the look-alike component (its smallest `film_id`); `ahash`: the film's
  512-bit average hash as 128 hex digits.

## Leakage

The source holds augmented copies (flips, rotations, noise, rescaling) filed as originals,
the same radiograph filed twice, and repeat visits of one patient that look alike. All copies
are removed and every look-alike component goes to a single split, so no test film has a
copy or a look-alike in train. To audit without trusting us, run
`pericurate audit OWNER/NAME@REVISION`: it recomputes every hash from the stored image bytes,
lists every cross-split pair within distance {params.lookalike_distance}, checks the
`cluster_id` column against the recomputed components and tests the referrals for hints.
`audit/clusters.parquet` maps each film to its component and split, and
`audit/manifest.parquet` gives every source file's fate and reason.

## Referrals

Each film carries a referral slip with a patient code, age, sex and reason, generated from a
salted hash of the film id (salt `{params.referral_salt}`). They are synthetic: they are
drawn without looking at the film or its annotations, so they carry no hint of the findings.

## Inter-annotator agreement

Films annotated twice in the source, scored one annotation against the other with the
environment's scorer: {agreement_line}.

## Version

{pin}

## Limits

- The source publishes no patient ids, so splits are per film and per look-alike component:
  {_visits_limit(summary)}
- The referral demographics are synthetic.
- Annotations are the source's; they were not re-read.

## Licences

The data are under CC BY 4.0 (see `LICENSE` and `NOTICE`, with attribution to Do et al.
2024, DOI {source.doi}); the curation code is under Apache-2.0.
"""


def render_card(build: Path, revision: str | None = None) -> str:
    """The whole README.md text for ``build``, made and checked by huggingface_hub's
    ``DatasetCard`` (the heavy libraries are imported only when a card is made, so a
    ``card`` with nothing to do starts without them)."""
    from huggingface_hub import DatasetCard

    summary = read_summary(build)
    data = card_data(summary, split_files(build))
    line = describe(agreement(build / AGREEMENT_FILE))
    return str(DatasetCard(f"---\n{data.to_yaml()}\n---\n{body(summary, line, revision)}"))


def write_card(build: Path, revision: str | None = None) -> Path:
    """README.md plus the LICENSE and NOTICE files into ``build/dataset``."""
    source = read_summary(build).source
    dataset_dir = build / "dataset"
    card = dataset_dir / "README.md"
    write_bytes(card, render_card(build, revision).encode("utf-8"))
    write_license_files(dataset_dir, source.citation, source.doi)
    return card
