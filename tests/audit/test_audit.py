"""``pericurate audit``: clean builds pass, leaks and hints fail, any image dataset can be read."""

from __future__ import annotations

import io
import json
import re
import shutil
import socket
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from PIL import Image

from curation.leaks import target as audit_target
from curation.leaks.referrals import find_hints, permutation_test
from curation.publish.referrals import referral_for
from tests.audit.audit_runs import FAST, copy_dataset, jpeg, rewrite, run, shard, write_generic


@pytest.fixture(scope="module")
def clean_run(sample_build: Path, tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("audit-clean")
    return run(sample_build, "--out", out), out


def test_clean_sample_build_passes(clean_run):
    result, out = clean_run
    assert result.exit_code == 0, result.output
    report = json.loads((out / "report.json").read_text())
    # No leak; the sample's planted visits of one patient that cross splits are shown (not
    # failed) and keep the report from calling itself clean
    # (tests/leaks/test_visits_across_splits.py).
    assert report["findings"] == []
    assert report["clean"] == (not report["cross_split_visits"]["listed"])
    assert report["clusters"]["consistent"] and report["clusters"]["spanning"] == []
    assert report["same_picture_turned"] == []
    assert report["parameters"]["thresholds_bits"] == {"ahash": 30}
    splits = report["splits"]
    assert set(splits) == {"train", "validation", "test"}
    for figures in splits.values():
        assert figures["lesions"] == sum(figures["grades"].values())
    assert splits["test"]["nearest_to_train"]["films"] == splits["test"]["films"]
    assert splits["test"]["nearest_to_train"]["min"] > 30
    assert {t["field"] for t in report["associations"]} >= {"age", "sex", "reason"}
    assert all(0 < t["p_value"] <= 1 for t in report["associations"])
    assert (out / "nearest.png").read_bytes().startswith(b"\x89PNG")


def test_what_phash_and_dhash_add_on_the_sample_are_visits_of_one_patient(
    sample_build: Path, sample_zip, tmp_path: Path
):
    """The chain links look-alikes by the 512-bit average hash (<= 30 bits, any orientation)
    and patient numbers. The sample's visits are drawn without the hash, so a few fall
    further apart; the reviewer's extra 64-bit hashes may flag them. Every pair they flag
    must be such a visit (a real limit of the rule, documented), never two unrelated films."""
    run(sample_build, "--out", tmp_path, "--method", "phash", "--method", "dhash", *FAST)
    report = json.loads((tmp_path / "report.json").read_text())
    patients = [set(g) for g in sample_zip[1].patient_groups]
    for pair in report["cross_split_pairs"]["listed"]:
        films = {pair["a"]["film_id"], pair["b"]["film_id"]}
        assert any(films <= group for group in patients), pair


def test_altered_test_film_copied_into_train_fails_and_is_named(
    sample_dataset_dir: Path, tmp_path: Path
):
    build = copy_dataset(sample_dataset_dir, tmp_path)
    test_row = pq.read_table(shard(build, "test")).to_pylist()[0]
    pixels = np.asarray(Image.open(io.BytesIO(test_row["image"]["bytes"])), dtype=np.int16)
    brighter = np.clip(pixels + 3, 0, 255).astype(np.uint8)
    copy_id = "990001"
    copied = {
        **test_row,
        "film_id": copy_id,
        "image": {"bytes": jpeg(brighter), "path": f"{copy_id}.jpg"},
        "cluster_id": copy_id,
        "ahash": "0" * 128,  # a stored hash the audit must not trust
    }
    rewrite(shard(build, "train"), [*pq.read_table(shard(build, "train")).to_pylist(), copied])

    result = run(build, "--out", tmp_path / "out", *FAST)

    assert result.exit_code == 1, result.output
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    pairs = report["cross_split_pairs"]["listed"]
    named = {(p["a"]["film_id"], p["b"]["film_id"]) for p in pairs}
    assert (copy_id, test_row["film_id"]) in named
    assert all(a == copy_id for a, _ in named)  # only the copy (and its look-alikes) leak
    assert not report["clusters"]["consistent"]
    page = (tmp_path / "out" / "report.html").read_text()
    flagged_rows = re.findall(r'<div class="card flagged">.*?</p></div>', page, flags=re.DOTALL)
    assert any(
        f"train / {copy_id}" in row and f"test / {test_row['film_id']}" in row
        for row in flagged_rows
    )


TURNS = {
    "mirror": lambda p: p[:, ::-1],
    "rot180": lambda p: np.rot90(p, 2),
    "rot90": lambda p: np.rot90(p, 1),
}


@pytest.mark.parametrize("view", TURNS)
def test_a_turned_test_film_added_to_train_fails_and_is_named(
    sample_dataset_dir: Path, tmp_path: Path, view: str
):
    """The commonest augmentation leak: upright hashes are far apart, so only a search in
    every orientation, confirmed in pixels, sees it."""
    build = copy_dataset(sample_dataset_dir, tmp_path)
    test_row = pq.read_table(shard(build, "test")).to_pylist()[0]
    pixels = np.asarray(Image.open(io.BytesIO(test_row["image"]["bytes"])).convert("L"))
    copy_id = "990002"
    turned = {
        **test_row,
        "film_id": copy_id,
        "image": {"bytes": jpeg(np.ascontiguousarray(TURNS[view](pixels))), "path": "x.jpg"},
        "cluster_id": copy_id,
    }
    rewrite(shard(build, "train"), [*pq.read_table(shard(build, "train")).to_pylist(), turned])

    result = run(build, "--out", tmp_path / "out", *FAST)

    assert result.exit_code == 1, result.output
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    named = {
        frozenset((p["film"]["film_id"], p["other"]["film_id"]))
        for p in report["same_picture_turned"]
    }
    assert named == {frozenset((copy_id, test_row["film_id"]))}
    assert any("mirrored or turned" in finding for finding in report["findings"])


def test_referral_field_depending_on_lesion_count_fails(sample_dataset_dir: Path, tmp_path: Path):
    build = copy_dataset(sample_dataset_dir, tmp_path)
    for split in ("train", "validation", "test"):
        rows = pq.read_table(shard(build, split)).to_pylist()
        for row in rows:
            row["referral"]["age"] = 25 + 9 * len(row["lesions"]) + int(row["film_id"][-1])
        rewrite(shard(build, split), rows)

    result = run(build, "--out", tmp_path / "out", *FAST)

    assert result.exit_code == 1, result.output
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    flagged = {(t["field"], t["label"]) for t in report["associations"] if t["flagged"]}
    assert ("age", "lesion_count") in flagged
    assert all(not t["flagged"] for t in report["associations"] if t["field"] != "age")
    assert report["cross_split_pairs"]["count"] == 0


def test_generic_parquet_dataset_is_audited(tmp_path: Path):
    clean = write_generic(tmp_path / "clean")
    result = run(clean, "--out", tmp_path / "out-clean", "--method", "phash")
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "out-clean" / "report.json").read_text())
    assert {s: f["films"] for s, f in report["splits"].items()} == {"train": 6, "test": 6}
    assert report["clusters"] is None and report["associations"] == []

    leaky = write_generic(tmp_path / "leaky", duplicate=True)
    result = run(leaky, "--out", tmp_path / "out-leaky")
    assert result.exit_code == 1, result.output
    report = json.loads((tmp_path / "out-leaky" / "report.json").read_text())
    [group] = report["exact_duplicates"]["same_bytes"]
    assert sorted(f["film_id"] for f in group) == ["test:6", "train:2"]


def test_same_inputs_give_identical_report_files(tmp_path: Path):
    folder = write_generic(tmp_path / "data", duplicate=True)
    run(folder, "--out", tmp_path / "one")
    run(folder, "--out", tmp_path / "two")
    for name in ("report.json", "report.html", "nearest.png"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()


def test_hub_target_is_read_at_its_revision(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    source = write_generic(tmp_path / "hub" / "data")
    calls = []

    def fake_snapshot_download(repo_id, *, repo_type, revision, allow_patterns):
        calls.append((repo_id, repo_type, revision))
        local = tmp_path / "snapshot"
        shutil.copytree(source.parent, local)
        return str(local)

    monkeypatch.setattr(audit_target, "snapshot_download", fake_snapshot_download)
    result = run("someone/periapical@3f2c1a9", "--out", tmp_path / "out")

    assert result.exit_code == 0, result.output
    assert calls == [("someone/periapical", "dataset", "3f2c1a9")]
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["target"] == "someone/periapical@3f2c1a9"
    assert report["splits"]["test"]["films"] == 6


def test_errors_exit_2_with_one_sentence(tmp_path: Path):
    result = run(tmp_path / "missing", "--out", tmp_path / "out")
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert "no such folder" in result.stderr

    folder = write_generic(tmp_path / "data")
    result = run(folder, "--image-column", "picture", "--out", tmp_path / "out")
    assert result.exit_code == 2
    assert result.stderr.strip().count("\n") == 0
    assert "no column 'picture'" in result.stderr and "-00000-of-00001.parquet" in result.stderr
    assert not (tmp_path / "out").exists()


def test_hint_lexicon_flags_clinical_terms_but_not_the_clean_slip():
    film = audit_target.Film("1", "test", 0, 0, "", "", b"")
    clean = referral_for("00011").as_row()
    clean["text"] += "Patient code: PT-ABCD36\nAge: 36\n"
    film.referral = clean
    assert find_hints([film]) == []
    film.referral = {"reason": "Pain and swelling, lower left molar (tooth 36), #19"}
    categories = {h.category for h in find_hints([film])}
    assert categories == {"symptom", "side", "tooth", "tooth number"}


def test_permutation_p_value_is_smallest_possible_for_perfect_dependence():
    values = list(range(40))
    _, observed, p = permutation_test(values, [2 * v for v in values], 199, [0])
    assert observed == pytest.approx(1.0)
    assert p == pytest.approx(1 / 200)
    _, unrelated, p_unrelated = permutation_test(["F", "M"] * 20, [0, 0, 1, 1] * 10, 199, [0])
    assert unrelated == pytest.approx(0.0)
    assert p_unrelated == 1.0


def test_a_negative_of_a_test_film_added_to_train_fails_and_is_named(
    sample_dataset_dir: Path, tmp_path: Path
):
    """A negative (grey levels inverted) is far from its film in every orientation; its
    inverted hash is near, and the pixel check maps grey levels by a negative gain."""
    build = copy_dataset(sample_dataset_dir, tmp_path)
    test_row = pq.read_table(shard(build, "test")).to_pylist()[0]
    pixels = np.asarray(Image.open(io.BytesIO(test_row["image"]["bytes"])).convert("L"))
    copy_id = "990003"
    negative = {
        **test_row,
        "film_id": copy_id,
        "image": {"bytes": jpeg(255 - pixels), "path": "x.jpg"},
        "cluster_id": copy_id,
    }
    rewrite(shard(build, "train"), [*pq.read_table(shard(build, "train")).to_pylist(), negative])

    result = run(build, "--out", tmp_path / "out", *FAST)

    assert result.exit_code == 1, result.output
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    named = {
        (frozenset((p["film"]["film_id"], p["other"]["film_id"])), p["view"])
        for p in report["same_picture_turned"]
    }
    assert named == {(frozenset((copy_id, test_row["film_id"])), "negative")}
    assert any("grey levels inverted" in finding for finding in report["findings"])


def test_a_test_row_reusing_a_train_film_id_for_another_image_is_named(
    sample_dataset_dir: Path, tmp_path: Path
):
    """Two different images under one id, in train and in test: the hashes see two unrelated
    films, but a join by id mixes the splits, so the audit names the id and is not clean."""
    build = copy_dataset(sample_dataset_dir, tmp_path)
    train_rows = pq.read_table(shard(build, "train")).to_pylist()
    test_rows = pq.read_table(shard(build, "test")).to_pylist()
    reused = train_rows[0]["film_id"]
    assert test_rows[0]["image"]["bytes"] != train_rows[0]["image"]["bytes"]
    test_rows[0]["film_id"] = reused
    rewrite(shard(build, "test"), test_rows)

    result = run(build, "--out", tmp_path / "out", *FAST)

    assert result.exit_code == 1, result.output
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["reused_film_ids"] == [{"film_id": reused, "splits": ["train", "test"]}]
    assert not report["clean"]
    assert (
        f"1 film ids name rows in more than one split: {reused!r} (train and test)."
        in (report["findings"])
    )


def test_an_unreachable_hub_target_is_one_sentence_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """No network: the client's LocalEntryNotFoundError becomes a sentence naming the target
    and the Hub it could not reach."""
    from huggingface_hub import constants

    with socket.socket() as closed:  # a loopback port nothing listens on
        closed.bind(("127.0.0.1", 0))
        endpoint = f"http://127.0.0.1:{closed.getsockname()[1]}"
    monkeypatch.setattr(constants, "ENDPOINT", endpoint)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    result = run("someone/periapical@main", "--out", tmp_path / "out")
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"someone/periapical@main: the Hub at {endpoint} cannot be")
    assert "no network" in result.stderr and "Error" not in result.stderr
