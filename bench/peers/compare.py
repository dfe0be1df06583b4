"""``python -m bench.peers.compare``: pericurate and its peers on the same folder of films,
interleaved.

The peers are the near-duplicate finders a curator would reach for: imagededup's PHash and
AHash (each at its default threshold, 10 bits of 64) and cleanvision's near-duplicate check
(its defaults). They only read images, so each is given the corpus's folder of original films
(``Original JPG Images``, where the corpus files a copy of every augmented film under a fresh
original stem, its re-filings and its look-alike visits). pericurate reads the whole extracted
archive, as ``make splits`` does: ``pericurate download FOLDER`` (records the folder, copies
nothing) and a cold ``pericurate build``, timed together. Order: pericurate, each peer,
pericurate again, each in its own measured child (``bench.common.measure``), so load falls on all.
Before each run every file of the corpus is read once, untimed (``warm``): no tool pays alone
for reading the corpus from disk (the first run of the previous round did, 5 s in its index),
and pages the system reclaimed between runs are back for each.

Scoring, against the corpus's truth (``*.truth.json``), per planted relation: a pair of films
is found when the tool puts both in one group. A peer's groups are the connected components of
the pairs it reports (what a curator must take to split without leakage); each peer is also
scored on its pairs as reported, where a chain earns nothing and costs nothing. pericurate's
groups are its same-picture groups (a dropped film and the film kept in its place,
``manifest.parquet``) for copies and re-filings, and its look-alike clusters
(``clusters.parquet``, a dropped film counted in its keeper's cluster) for look-alikes. A false
pair is two films in one group (for pericurate: one cluster) that no planted relation joins,
even through other films (copies, re-filings, look-alike visits, distant visits and films of
one patient all join). Figures describe the synthetic corpus only.

A peer that fails on the folder (the corpus plants files no tool should trust: a
decompression bomb, a truncated JPEG, a file that is not an image) is recorded as failed,
then run again on a folder of links to every film but the planted bad files, and that run is
scored under the tool's name with "(bad files removed)": what a curator would get after
cleaning the folder by hand, which pericurate does not need.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from collections import defaultdict
from itertools import combinations
from pathlib import Path

import pyarrow.parquet as pq

from bench.common.corpus import CORPUS_DIR, corpus_source, corpus_zip
from bench.common.measure import ChildFailed, Measured, run_measured
from bench.common.splits_bench import pericurate
from curation.drawing.reframe import REFRAMINGS
from curation.sample import SampleTruth, truth_path

PEERS = ("imagededup-phash", "imagededup-ahash", "cleanvision")
ENV = Path(__file__).with_name("env")  # the peers' own environment (fastdup needs numpy < 2)
PEER_CHILD = Path(__file__).with_name("peer_child.py")
IMAGEDEDUP_DEFAULT = 10.0  # bits of 64: imagededup's default threshold
FASTDUP_DEFAULT = 0.9  # cosine similarity: fastdup's default threshold
ORIGINALS = "Original JPG Images"
TURNS = {"rot+90": "quarter turn", "rot-90": "quarter turn", "rot180": "half turn"}
RELATIONS = (
    "noise",
    "scaling",
    "mirror",
    "quarter turn",
    "half turn",
    *REFRAMINGS,
    "re-filing",
    "look-alike",
)

Pair = tuple[str, str]


def _pair(a: str, b: str) -> Pair:
    return (a, b) if a < b else (b, a)


def relations(truth: SampleTruth) -> dict[str, set[Pair]]:
    """The planted pairs of each relation among the originals folder's films."""
    found: dict[str, set[Pair]] = {name: set() for name in RELATIONS}
    for copy in truth.augmented_among_originals:
        name = TURNS.get(copy.transform, copy.kind) if copy.kind == "rotation" else copy.kind
        found[name].add(_pair(copy.stem, copy.source))
    found["re-filing"] = {_pair(d.first, d.second) for d in truth.double_annotated}
    found["look-alike"] = {
        _pair(a, b) for g in truth.lookalike_groups for a, b in combinations(g, 2)
    }
    return found


class Groups:
    """Union-find over film ids: which group each film ends up in."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, film: str) -> str:
        root = self.parent.setdefault(film, film)
        while root != self.parent[root]:
            root = self.parent[root]
        self.parent[film] = root
        return root

    def join(self, a: str, b: str) -> None:
        self.parent[self.find(a)] = self.find(b)

    def members(self) -> list[list[str]]:
        by_root = defaultdict(list)
        for film in self.parent:
            by_root[self.find(film)].append(film)
        return [sorted(m) for m in by_root.values() if len(m) > 1]


def joined_groups(pairs: set[Pair] | list[Pair]) -> Groups:
    groups = Groups()
    for a, b in pairs:
        groups.join(a, b)
    return groups


def truth_groups(truth: SampleTruth) -> Groups:
    """Films joined by any planted relation, also through other films."""
    groups = joined_groups(set().union(*relations(truth).values()))
    for copy in (*truth.augmented, *truth.held_out):
        groups.join(copy.stem, copy.source)
    for group in (*truth.distant_visit_groups, *truth.patient_groups):
        for other in group[1:]:
            groups.join(group[0], other)
    return groups


def _scored(found: dict[str, int], planted: dict[str, set[Pair]], false_pairs: int) -> dict:
    recall = {n: round(found[n] / len(pairs), 4) if pairs else None for n, pairs in planted.items()}
    return {"recall": recall, "found": found, "false_pairs": false_pairs}


def score(found_by: dict[str, Groups], grouped: Groups, truth: SampleTruth) -> dict:
    """Recall per relation (``found_by[relation]`` groups the films for that relation) and the
    false pairs among ``grouped``'s groups."""
    planted = relations(truth)
    joined = truth_groups(truth)
    found = {
        name: sum(found_by[name].find(a) == found_by[name].find(b) for a, b in pairs)
        for name, pairs in planted.items()
    }
    false_pairs = sum(
        joined.find(a) != joined.find(b)
        for members in grouped.members()
        for a, b in combinations(members, 2)
    )
    return _scored(found, planted, false_pairs)


def score_reported(pairs: list[Pair], truth: SampleTruth) -> dict:
    """Recall and false pairs of the pairs a peer reports, as it reports them: a planted pair
    counts only when reported itself, not when reached through other reported pairs (the
    ``score`` of a peer's groups credits such chains, and charges the false pairs they make)."""
    reported = set(pairs)
    planted = relations(truth)
    joined = truth_groups(truth)
    found = {name: len(planted_pairs & reported) for name, planted_pairs in planted.items()}
    return _scored(found, planted, sum(joined.find(a) != joined.find(b) for a, b in reported))


def _stem(name: str) -> str:
    return Path(name).stem


def peer_python() -> Path:
    """The peers' environment's interpreter (``uv sync --frozen --project bench/peers/env``)."""
    return ENV / ".venv" / "bin" / "python"


def run_peer(tool: str, folder: Path, work: Path) -> tuple[dict, list[tuple[str, str, float]]]:
    """One peer on ``folder`` in its own measured child, in the peers' environment: its CPU,
    wall and peak memory, and every pair of stems it reports with its closeness
    (``bench/peers/peer_child.py``)."""
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    measured, _ = timed_child([str(peer_python()), str(PEER_CHILD), tool, str(folder), str(work)])
    reported = json.loads((work / "pairs.json").read_text())["pairs"]
    pairs = [(str(a), str(b), float(c)) for a, b, c in reported]
    return measured, pairs


def timed_child(command: list[str]) -> tuple[dict, Measured]:
    """``command`` run as one measured child: its CPU, wall and peak memory and the load when
    it started, and the run itself."""
    load = os.getloadavg()[0]
    run = run_measured(command)
    measured = {
        "cpu_s": round(run.cpu_s, 2),
        "wall_s": run.wall_s,
        "peak_rss_mib": run.peak_rss_mib,
        "load_1min_at_start": load,
    }
    return measured, run


def at_default(tool: str, pairs: list[tuple[str, str, float]]) -> list[Pair]:
    """The pairs a peer reports at its own default cut (imagededup: 10 bits of 64; fastdup:
    a cosine similarity of 0.9; cleanvision reports its sets at its defaults)."""
    if tool.startswith("imagededup-"):
        return sorted({_pair(a, b) for a, b, d in pairs if d <= IMAGEDEDUP_DEFAULT})
    if tool == "fastdup":
        return sorted({_pair(a, b) for a, b, s in pairs if s >= FASTDUP_DEFAULT})
    return sorted({_pair(a, b) for a, b, _ in pairs})


def pericurate_groups(build: Path) -> tuple[Groups, Groups]:
    """pericurate's same-picture groups and look-alike clusters (dropped films counted in
    their keeper's cluster), from the build's outputs."""
    same = Groups()
    for row in pq.read_table(build / "manifest.parquet").to_pylist():
        if row["kind"] == "image" and row["fate"] == "dropped" and row["related"]:
            same.join(row["film_id"], row["related"])
    clusters = Groups()
    for row in pq.read_table(build / "clusters.parquet").to_pylist():
        clusters.join(row["film_id"], "cluster:" + row["cluster_id"])
    for film in list(same.parent):
        keeper = same.find(film)
        if keeper != film:
            clusters.join(film, keeper)
    return same, _without_labels(clusters)


def _without_labels(clusters: Groups) -> Groups:
    """The clusters as groups of films only (the ``cluster:`` labels dropped)."""
    films = Groups()
    for members in clusters.members():
        real = [m for m in members if not m.startswith("cluster:")]
        for other in real[1:]:
            films.join(real[0], other)
    return films


def _run_pericurate(source: Path, build: Path) -> dict:
    shutil.rmtree(build, ignore_errors=True)
    python = sys.executable
    load = os.getloadavg()[0]
    lock = str(build / "source.lock.json")  # not the default, the working folder's lock
    download = run_measured(
        pericurate(python, "download", str(source), "--build", str(build), "--lock", lock)
    )
    built = run_measured(
        pericurate(python, "build", "--build", str(build), "--no-fail-on-rejected")
    )
    return {
        "wall_s": round(download.wall_s + built.wall_s, 3),
        "build_s": built.wall_s,
        "peak_rss_mib": max(download.peak_rss_mib, built.peak_rss_mib),
        "load_1min_at_start": load,
    }


def _run_peer(tool: str, folder: Path, work: Path) -> tuple[dict, list[Pair] | None]:
    try:
        measured, pairs = run_peer(tool, folder, work / tool)
    except ChildFailed as failure:
        return {"load_1min_at_start": os.getloadavg()[0], "error": str(failure)[-1500:]}, None
    return measured, at_default(tool, pairs)


def without_bad_files(folder: Path, truth: SampleTruth, work: Path) -> Path:
    """A folder of symbolic links to every file of ``folder`` but the planted bad ones."""
    bad = {b.stem for b in truth.bad_inputs}
    clean = work / "originals-without-bad-files"
    shutil.rmtree(clean, ignore_errors=True)
    clean.mkdir(parents=True)
    for film in sorted(folder.iterdir()):
        if film.is_file() and film.stem not in bad:
            (clean / film.name).symlink_to(film.resolve())
    return clean


def originals_folder(root: Path) -> Path:
    """The corpus's folder of original films below the extracted archive's root."""
    return next(p for p in root.rglob(ORIGINALS) if p.is_dir())


def measure(archive: Path, work: Path = CORPUS_DIR / "peers", peers: tuple[str, ...] = PEERS):
    """Every tool on the corpus ``archive``; see the module docstring and bench/RESULTS.md."""
    truth = SampleTruth.from_json(truth_path(archive).read_text())
    root = corpus_source(archive).root
    folder = originals_folder(root)
    planted = relations(truth)
    result: dict = {
        "corpus": {
            "archive": archive.name,
            "films_in_folder": sum(1 for p in folder.iterdir() if p.is_file()),
            "planted_pairs": {name: len(pairs) for name, pairs in planted.items()},
        },
        "runs": [],
    }
    for tool in ("pericurate", *peers, "pericurate"):
        warm(root)
        if tool == "pericurate":
            build = work / archive.stem / f"build-{len(result['runs'])}"
            run = _run_pericurate(root, build)
            same, clusters = pericurate_groups(build)
            found_by = {name: same for name in RELATIONS} | {"look-alike": clusters}
            run |= score(found_by, clusters, truth)
        else:
            run, pairs = _run_peer(tool, folder, work / archive.stem)
            if pairs is None:
                result["runs"].append({"tool": tool, **run})
                tool += " (bad files removed)"
                clean = without_bad_files(folder, truth, work / archive.stem)
                warm(root)
                run, pairs = _run_peer(tool.split()[0], clean, work / archive.stem)
            if pairs is not None:
                groups = joined_groups(pairs)
                run |= score(dict.fromkeys(RELATIONS, groups), groups, truth)
                run["reported_pairs"] = len(pairs)
                run["as_reported"] = score_reported(pairs, truth)
        result["runs"].append({"tool": tool, **run})
    return result


def warm(root: Path) -> int:
    """Read every file below ``root`` once, so that it sits in the page cache; bytes read."""
    total = 0
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            with path.open("rb") as stream:
                while chunk := stream.read(1 << 20):
                    total += len(chunk)
    return total


def table(result: dict) -> str:
    """The runs as a Markdown table, one row per run."""
    head = ["tool", "wall s", "peak RSS MiB", *RELATIONS, "false pairs", "load"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    planted = result["corpus"]["planted_pairs"]
    for run in result["runs"]:
        if "error" in run:
            cells = [run["tool"], "failed: " + run["error"].splitlines()[-1][:80]]
            cells += [""] * (len(head) - 2)
        else:
            found = [f"{run['found'][n]}/{planted[n]}" for n in RELATIONS]
            cells = [run["tool"], f"{run['wall_s']:.1f}", f"{run['peak_rss_mib']:.0f}", *found]
            cells += [str(run["false_pairs"]), f"{run['load_1min_at_start']:.1f}"]
        lines.append("| " + " | ".join(cells) + " |")
        if "as_reported" in run:
            direct = run["as_reported"]
            found = [f"{direct['found'][n]}/{planted[n]}" for n in RELATIONS]
            cells = [f"{run['tool']}, pairs as reported", "", "", *found]
            lines.append("| " + " | ".join([*cells, str(direct["false_pairs"]), ""]) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.peers.compare", description=__doc__)
    parser.add_argument("--zip", type=Path, help="corpus archive (default: --films)")
    parser.add_argument("--films", type=int, default=4000, help="corpus size to build or reuse")
    parser.add_argument("--peers", default=",".join(PEERS))
    parser.add_argument("--out", type=Path, help="also write the result here, as JSON")
    args = parser.parse_args(argv)
    result = measure(args.zip or corpus_zip(args.films), peers=tuple(args.peers.split(",")))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(table(result))


if __name__ == "__main__":
    main()
