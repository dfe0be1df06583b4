"""The peers benchmark's scoring (``bench.peers.compare``), without the peers themselves: a
tool that finds exactly the planted relations scores full recall and no false pair, one that chains
every film into one group scores full recall and is charged its false pairs, and pericurate's
own build is scored from its outputs."""

from __future__ import annotations

import json

import numpy as np
from PIL import Image

import bench.peers.compare as peers
from bench.peers.compare import (
    RELATIONS,
    Groups,
    joined_groups,
    originals_folder,
    pericurate_groups,
    relations,
    score,
    score_reported,
    truth_groups,
    warm,
    without_bad_files,
)
from curation.sample.layout import ORIGINAL_DIR


def test_exact_groups_score_full_recall_and_no_false_pair(sample_zip):
    _, truth = sample_zip
    planted = relations(truth)
    exact = joined_groups(set().union(*planted.values()))
    result = score(dict.fromkeys(RELATIONS, exact), exact, truth)
    assert result["false_pairs"] == 0
    assert all(result["recall"][name] == 1.0 for name in RELATIONS if planted[name])


def test_a_tool_chaining_every_film_is_charged_its_false_pairs(sample_zip):
    _, truth = sample_zip
    films = sorted(truth.originals)
    chained = joined_groups([(films[0], other) for other in films[1:]])
    result = score(dict.fromkeys(RELATIONS, chained), chained, truth)
    assert result["false_pairs"] > len(films)
    nothing = joined_groups([])
    missed = score(dict.fromkeys(RELATIONS, nothing), nothing, truth)
    assert missed["false_pairs"] == 0 and set(missed["found"].values()) == {0}


def test_pericurate_is_scored_from_its_build(sample_zip, sample_build):
    _, truth = sample_zip
    same, clusters = pericurate_groups(sample_build)
    found_by = dict.fromkeys(RELATIONS, same) | {"look-alike": clusters}
    result = score(found_by, clusters, truth)
    copies = ("noise", "scaling", "mirror", "quarter turn", "half turn", "re-filing")
    assert result["false_pairs"] == 0
    assert all(result["recall"][name] in (1.0, None) for name in copies)


def test_the_clean_folder_links_every_film_but_the_planted_bad_files(
    sample_zip, sample_source, tmp_path
):
    _, truth = sample_zip
    folder = originals_folder(sample_source.root)
    clean = without_bad_files(folder, truth, tmp_path)
    bad = {b.stem for b in truth.bad_inputs}
    kept = {p.name for p in clean.iterdir()}
    expected = {p.name for p in folder.iterdir() if p.is_file() and p.stem not in bad}
    assert kept == expected and len(kept) < sum(1 for p in folder.iterdir() if p.is_file())
    assert all((clean / name).resolve() == (folder / name).resolve() for name in kept)


def test_a_peer_as_reported_earns_no_pair_through_a_chain(sample_zip):
    """Scored on its pairs as reported, a tool that chains two look-alike visits through a
    third film finds neither pair it did not report, and each reported unrelated pair is
    one false pair; scored as groups, the chain finds the visits' pair."""
    _, truth = sample_zip
    visit, other_visit = sorted(relations(truth)["look-alike"])[0]
    truth_joined = truth_groups(truth)
    hub = next(
        f for f in sorted(truth.originals) if truth_joined.find(f) != truth_joined.find(visit)
    )
    chain = [tuple(sorted((hub, visit))), tuple(sorted((hub, other_visit)))]
    direct = score_reported(chain, truth)
    assert direct["found"]["look-alike"] == 0 and direct["false_pairs"] == 2
    grouped = joined_groups(chain)
    assert score(dict.fromkeys(RELATIONS, grouped), grouped, truth)["found"]["look-alike"] >= 1
    assert score_reported([(visit, other_visit)], truth)["found"]["look-alike"] == 1


def test_warming_reads_every_file_below_the_root_once_and_skips_links(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "one.jpg").write_bytes(b"x" * 3_000_000)
    (tmp_path / "a" / "b" / "two.xml").write_bytes(b"y" * 10)
    (tmp_path / "link.jpg").symlink_to(tmp_path / "a" / "one.jpg")
    assert warm(tmp_path) == 3_000_010


def test_every_timed_run_starts_after_the_corpus_was_read_again(
    sample_zip, sample_source, monkeypatch, tmp_path
):
    """Each tool's run, a peer's retry without the bad files included, follows a warming
    read, so that no run pays alone for reading the corpus from disk."""
    events: list[str] = []

    def peer(tool: str, folder, work):
        events.append(tool)
        failed = tool == "second" and events.count("second") == 1
        return ({"error": "planted bad file"}, None) if failed else ({"wall_s": 1.0}, [])

    def pericurate(source, build):
        events.append("pericurate")
        return {"wall_s": 1.0}

    monkeypatch.setattr(peers, "corpus_source", lambda archive: sample_source)
    monkeypatch.setattr(peers, "warm", lambda root: events.append("warm") or 0)
    monkeypatch.setattr(peers, "_run_pericurate", pericurate)
    monkeypatch.setattr(peers, "pericurate_groups", lambda build: (Groups(), Groups()))
    monkeypatch.setattr(peers, "_run_peer", peer)
    monkeypatch.setattr(peers, "without_bad_files", lambda folder, truth, work: folder)
    result = peers.measure(sample_zip[0], tmp_path, peers=("first", "second"))
    assert events == [
        "warm",
        "pericurate",
        "warm",
        "first",
        "warm",
        "second",
        "warm",
        "second",
        "warm",
        "pericurate",
    ]
    assert [run["tool"] for run in result["runs"]] == [
        "pericurate",
        "first",
        "second",
        "second (bad files removed)",
        "pericurate",
    ]


def test_real_folder_scoring_counts_copies_and_charges_mixed_groups():
    """On the real-film folder a copy is found in its original's group, and a group that
    holds two originals' films is charged every pair across them."""
    from bench.peers.real import scored

    truth = {"o1": "o1", "c1": "o1", "o2": "o2", "c2": "o2", "c3": "o2"}
    exact = joined_groups([("o1", "c1"), ("o2", "c2"), ("o2", "c3")])
    assert scored(exact, truth) == {"copies_found": 3, "false_pairs": 0}
    mixed = joined_groups([("o1", "c1"), ("c1", "c2")])
    assert scored(mixed, truth) == {"copies_found": 1, "false_pairs": 2}


def test_a_peer_is_tuned_to_the_loosest_cut_without_a_false_pair():
    """fastdup's similarities (higher is closer) and imagededup's distances (lower is
    closer): the tuned cut stops just before the first pair that joins two originals."""
    from bench.peers.real import peer_scores

    truth = {"o1": "o1", "c1": "o1", "o2": "o2", "c2": "o2"}
    similar = [("o1", "c1", 0.99), ("o2", "c2", 0.85), ("o1", "o2", 0.80), ("c1", "c2", 0.95)]
    fast = peer_scores("fastdup", similar, truth)
    assert fast["default"] == {"cut": 0.9, "copies_found": 1, "false_pairs": 2}
    assert fast["no_false_pair"] == {"cut": 0.99, "copies_found": 1, "false_pairs": 0}
    near = [("o1", "c1", 2.0), ("o2", "c2", 6.0), ("o1", "o2", 14.0)]
    hashed = peer_scores("imagededup-phash", near, truth)
    assert hashed["default"]["copies_found"] == 2 and hashed["default"]["false_pairs"] == 0
    assert hashed["no_false_pair"] == {"cut": 6.0, "copies_found": 2, "false_pairs": 0}
    sets = peer_scores("cleanvision", [("o1", "c1", 0.0)], truth)
    assert sets == {"default": {"copies_found": 1, "false_pairs": 0}}


def test_the_archive_sized_folder_holds_the_archive_sized_films_alone(tmp_path, monkeypatch):
    """``--archive-sized``: the originals are the archive-sized films alone (the 512-px films
    are squashed copies, cheaper for a tool that decodes every pixel), each with its copies."""
    from bench.peers import real_folder

    sizes = {"small": (64, 64), "native": (96, 48)}
    for name, (width, height) in sizes.items():
        folder = tmp_path / name
        folder.mkdir()
        for number in range(2):
            grey = np.random.default_rng(number).integers(0, 255, (height, width), np.uint8)
            Image.fromarray(grey).save(folder / f"{name}-{number}.jpg")
    monkeypatch.setattr(real_folder, "REAL_FILMS", tmp_path / "small")
    monkeypatch.setattr(real_folder, "NATIVE_FILMS", tmp_path / "native")
    for archive_sized, originals in ((False, 4), (True, 2)):
        truth = real_folder.write_folder(tmp_path / "work", 1, archive_sized=archive_sized)
        kept = sorted(stem for stem, original in truth.items() if stem == original)
        assert len(kept) == originals and len(truth) == 2 * originals
        folder = tmp_path / "work" / "source" / ORIGINAL_DIR
        with Image.open(folder / f"{kept[0]}.jpg") as first:
            assert first.size == (sizes["native"] if archive_sized else sizes["small"])


def test_the_floor_reads_every_film_and_matches_every_copy_to_its_original(
    tmp_path, monkeypatch, capsys
):
    """The floor row's child pays for every film of the folder (read, sha256, decode,
    features) and for one match of each copy to its original, as the folder's truth says."""
    from bench.peers import floor_child, real_folder

    films = tmp_path / "films"
    films.mkdir()
    for number in range(3):
        blocks = np.random.default_rng(number).integers(0, 255, (24, 32), np.uint8)
        textured = np.kron(blocks, np.ones((8, 8), np.uint8))  # 256 x 192, ORB finds corners
        Image.fromarray(textured).save(films / f"film-{number}.jpg", quality=95)
    monkeypatch.setattr(real_folder, "REAL_FILMS", films)
    monkeypatch.setattr(real_folder, "NATIVE_FILMS", tmp_path / "none")
    work = tmp_path / "work"
    truth = real_folder.write_folder(work, 2)
    floor_child.main([str(work / "source" / ORIGINAL_DIR), str(work / real_folder.TRUTH_FILE)])
    done = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert done["films"] == done["contents"] == len(truth) == 9
    assert done["copies_matched"] == 6
    assert done["copies_fitted"] == 6  # re-encoded and re-toned copies: each fits its original


def test_the_table_gives_the_floor_and_half_the_fastest_peer():
    """The floor finds no copy, so its row gives its CPU alone; the goal under the table is half
    the fastest peer's CPU, not of pericurate's rows nor the floor's."""
    from bench.peers.real import FLOOR, table

    def run(tool: str, cpu: float, **scores: object) -> dict:
        return {"tool": tool, "cpu_s": cpu, "wall_s": cpu, "peak_rss_mib": 100.0, **scores}

    found = {"default": {"copies_found": 4, "false_pairs": 0}}
    runs = [run("pericurate, copies only", 3.0, **found), run(FLOOR, 2.0)]
    runs += [run("cleanvision", 9.0, **found), run("fastdup", 14.0, **found)]
    shown = table({"measured": True, "folder": {"films": 8, "copies": 4}, "runs": runs})
    assert f"| {FLOOR} | 2.0 | 2.0 | 100 |  |  |  |" in shown
    assert "| cleanvision | 9.0 | 9.0 | 100 | 4/4 | 0 |  |" in shown
    assert shown.endswith("The goal, half the fastest peer's CPU: 4.5 s.")
