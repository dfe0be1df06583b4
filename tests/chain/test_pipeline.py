"""The chain's invariants, checked on a build of the synthetic sample source."""

import hashlib
import io
import itertools
import json
import re
import zipfile
from pathlib import Path

import datasets
import networkx as nx
import numpy as np
import pyarrow.parquet as pq
from PIL import Image
from typer.testing import CliRunner

from curation.chain.executors import LocalExecutor
from curation.chain.runner import Settings, curate
from curation.cli.app import EXIT_REJECTED, app
from curation.core.atomic import write_json
from curation.core.jpeg_publish import publishable_jpeg
from curation.hashes.hashing import AverageHash512, View, hamming
from curation.hashes.pairs import as_codes, range_pairs
from curation.publish.schema import SPLITS, features

OUTPUTS = ("manifest.parquet", "clusters.parquet", "agreement.parquet", "curation.json")


def _manifest(build: Path) -> dict[str, dict]:
    return {row["path"]: row for row in pq.read_table(build / "manifest.parquet").to_pylist()}


def _rows(build: Path) -> dict[str, list[dict]]:
    data = build / "dataset" / "data"
    return {s: pq.read_table(data / f"{s}-00000-of-00001.parquet").to_pylist() for s in SPLITS}


def test_every_source_file_has_one_fate_and_fates_add_up(sample_zip, sample_build):
    members = [i.filename for i in zipfile.ZipFile(sample_zip[0]).infolist() if not i.is_dir()]
    manifest = _manifest(sample_build)
    assert sorted(manifest) == sorted(members)
    assert all(
        row["fate"] in {"kept", "dropped", "rejected", "ignored"} for row in manifest.values()
    )
    assert all(row["reason"] for row in manifest.values())
    counts = json.loads((sample_build / "curation.json").read_text())["counts"]
    assert sum(counts["by_kind_and_fate"].values()) == len(members)


def test_every_planted_bad_input_is_rejected_with_a_reason(sample_zip, sample_build):
    manifest = _manifest(sample_build)
    truth = sample_zip[1]
    for bad in truth.bad_inputs:
        row = manifest[bad.path]
        if row["kind"] == "annotation" and bad.reason != "annotation without image":
            film = next(
                r for r in manifest.values() if r["kind"] == "image" and r["film_id"] == bad.stem
            )
            row = film
        assert row["fate"] == "rejected", (bad, row)


def test_no_augmented_film_is_kept(sample_zip, sample_build):
    """Copies filed as augmented are never kept. Of a copy filed among the originals, one film
    of the pair is kept: the source where the pixels tell (noise, rescaling, quarter-turn);
    for a mirror or half-turn nothing tells, and either may stay."""
    truth = sample_zip[1]
    kept = {r["film_id"] for rows in _rows(sample_build).values() for r in rows}
    assert kept and not kept & {a.stem for a in truth.augmented}
    for copy in truth.augmented_among_originals:
        assert len(kept & {copy.stem, copy.source}) == 1, copy
        if copy.kind not in ("mirror", "rotation") or copy.detail == "angle=-90":
            assert copy.source in kept, copy
    assert kept <= set(truth.originals) | {a.stem for a in truth.augmented_among_originals}


def test_double_annotated_films_are_kept_once_and_go_to_agreement(sample_zip, sample_build):
    kept = {r["film_id"] for rows in _rows(sample_build).values() for r in rows}
    agreement = pq.read_table(sample_build / "agreement.parquet").to_pylist()
    pairs = {frozenset((a["film_id"], a["other_film_id"])) for a in agreement}
    for twin in sample_zip[1].double_annotated:
        assert len({twin.first, twin.second} & kept) == 1, twin
        assert frozenset((twin.first, twin.second)) in pairs


def test_no_cross_split_pair_within_30_bits_recomputed_from_the_stored_bytes(sample_build):
    ids, codes, split_of = [], [], []
    for split, rows in _rows(sample_build).items():
        for row in rows:
            views = AverageHash512("full").hash_views(io.BytesIO(row["image"]["bytes"]))
            ids.append(row["film_id"])
            codes.append(views[View.identity])
            split_of.append(split)
    matrix = as_codes(codes)
    for block in range_pairs(matrix, matrix, 30):
        for i, j, _ in block.tolist():
            assert split_of[i] == split_of[j], (ids[i], ids[j])


def test_lookalike_groups_within_the_rule_share_a_cluster_and_a_split(sample_zip, sample_build):
    """The sample's visits of one patient are drawn without the hash, so some fall further
    apart than the rule links (the measured share is in the README). Every group the rule
    does see (connected by links of <= 30 bits in some orientation, recomputed here from the
    stored bytes) must share one cluster and one split."""
    rows = {r["film_id"]: (s, r) for s, rs in _rows(sample_build).items() for r in rs}
    hasher = AverageHash512()
    seen = 0
    for group in sample_zip[1].lookalike_groups:
        kept = sorted(f for f in group if f in rows)
        views = {f: hasher.hash_views(io.BytesIO(rows[f][1]["image"]["bytes"])) for f in kept}
        graph = nx.Graph()
        graph.add_nodes_from(kept)
        for a, b in itertools.combinations(kept, 2):
            near = min(hamming(views[a][v], views[b][View.identity]) for v in View)
            if near <= 30:
                graph.add_edge(a, b)
        for component in nx.connected_components(graph):
            placed = {(rows[f][0], rows[f][1]["cluster_id"]) for f in component}
            assert len(placed) == 1, (group, component)
            seen += len(component) > 1
    assert seen, "the sample plants no look-alike visits within the rule"


def test_boxes_are_fractions_of_the_true_size_with_corners_ordered(sample_zip, sample_build):
    truth = sample_zip[1].film_truth
    rows = [r for rs in _rows(sample_build).values() for r in rs]
    checked = [r for r in rows if r["film_id"] in truth]  # kept mirror copies have no truth entry
    assert len(checked) >= len(rows) - 2
    for row in checked:
        film = truth[row["film_id"]]
        assert (row["width"], row["height"]) == (film.width, film.height)
        expected = sorted(
            (x1 / film.width, y1 / film.height, x2 / film.width, y2 / film.height, g)
            for x1, y1, x2, y2, g in film.lesions
        )
        got = sorted((*les["box"], les["pai"]) for les in row["lesions"])
        assert [g[4] for g in got] == [e[4] for e in expected], row["film_id"]
        assert np.allclose([g[:4] for g in got], [e[:4] for e in expected], atol=1e-6), row[
            "film_id"
        ]


def test_the_dataset_loads_with_datasets_and_keeps_the_source_bytes(sample_source, sample_build):
    loaded = datasets.load_dataset("parquet", data_dir=str(sample_build / "dataset" / "data"))
    assert set(loaded) == set(SPLITS)
    assert loaded["test"].features == features()
    manifest = {
        r["film_id"]: r
        for r in _manifest(sample_build).values()
        if r["kind"] == "image" and r["fate"] == "kept"
    }
    row = _rows(sample_build)["test"][0]
    source = (sample_source.root / manifest[row["film_id"]]["path"]).read_bytes()
    # the source's own segments, without its text (EXIF, COM): same pixels, never re-encoded
    assert row["image"]["bytes"] == publishable_jpeg(source) != source
    published = hashlib.sha256(row["image"]["bytes"]).hexdigest()
    assert published == manifest[row["film_id"]]["published_sha256"]
    assert loaded["test"][0]["film_id"] == row["film_id"]
    with Image.open(io.BytesIO(source)) as original:
        assert np.array_equal(np.asarray(loaded["test"][0]["image"]), np.asarray(original))


def test_no_patient_number_reaches_any_output(sample_build):
    pattern = re.compile(r"PN\d")
    for name in OUTPUTS:
        path = sample_build / name
        text = (
            path.read_text()
            if name.endswith(".json")
            else json.dumps(pq.read_table(path).to_pylist(), default=str)
        )
        assert not pattern.search(text), name
    for rows in _rows(sample_build).values():
        for row in rows:
            assert not pattern.search(json.dumps(row["referral"])) and not pattern.search(
                row["image"]["path"]
            )


def test_a_second_build_is_byte_identical(sample_source, sample_build, tmp_path):
    curate(sample_source, tmp_path, Settings(), executor=LocalExecutor(2))
    for name in (*OUTPUTS, *(f"dataset/data/{s}-00000-of-00001.parquet" for s in SPLITS)):
        assert (tmp_path / name).read_bytes() == (sample_build / name).read_bytes(), name


def test_cli_exit_status_says_files_were_rejected(sample_source, tmp_path):
    write_json(
        tmp_path / "work" / "source.json",
        {
            "root": str(sample_source.root),
            "origin": sample_source.origin,
            "sha256": sample_source.sha256,
            "size": sample_source.size,
            "skipped": list(sample_source.skipped),
            "comment": sample_source.comment,
        },
    )
    result = CliRunner().invoke(app, ["lookalikes", "--build", str(tmp_path), "--workers", "1"])
    assert result.exit_code == EXIT_REJECTED, result.output
    assert (tmp_path / "work" / "07-lookalikes.parquet").exists()
    ok = CliRunner().invoke(app, ["index", "--build", str(tmp_path), "--no-fail-on-rejected"])
    assert ok.exit_code == 0


def test_clusters_equal_the_components_of_the_recorded_hashes(sample_build):
    rows = [r for rs in _rows(sample_build).values() for r in rs]
    codes = as_codes([bytes.fromhex(r["ahash"]) for r in rows])
    parent = list(range(len(rows)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for block in range_pairs(codes, codes, 30):
        for i, j, _ in block.tolist():
            parent[find(i)] = find(j)
    groups: dict[int, set[str]] = {}
    for k, row in enumerate(rows):
        groups.setdefault(find(k), set()).add(row["cluster_id"])
    # Upright links are a subset of the chain's links (every orientation, short hashes,
    # patients, inherited links), so each upright component lies within one stored cluster.
    assert all(len(ids) == 1 for ids in groups.values())
    assert len({row["cluster_id"] for row in rows}) <= len(groups)
    assert np.all([row["cluster_id"] <= row["film_id"] for row in rows])


def test_the_build_records_that_its_source_is_the_synthetic_sample(sample_build):
    source = json.loads((sample_build / "curation.json").read_text())["source"]
    assert source["synthetic"] is True
    assert "not real data" in source["archive_comment"]
