"""An audit that stops midway (killed, interrupted) keeps what it stored below its report
folder (the row groups' hashes, the films' features, the pairs its search found, those it
verified and their aligned checks), and the next audit into that folder reads them again
instead of doing the work anew: at a million rows that is hours. Its report is the one an audit
that never stopped writes. One audit writes into a report folder at a time."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from filelock import FileLock
from typer.testing import CliRunner

import curation.hashes.mapped_pairs
import curation.leaks.identical
import curation.leaks.nearest
import curation.leaks.scan
import curation.leaks.visits
import curation.visits.find
from curation.audit.audit import VISIT_FEATURES, WORK_FOLDER, run_audit
from curation.audit.report import write_report
from curation.cli.app import app
from curation.core.build_lock import LOCK_NAME
from curation.core.store import ArrayStore
from curation.leaks.target import AuditError
from curation.leaks.visits import describe_films
from curation.visits.descriptors import DESCRIPTORS_VERSION
from tests.audit.test_audit_at_scale import FILMS, RecordingMap, write_target


class Stopped(Exception):
    """Stands in for the audit's process being stopped."""


class StoppingMap:
    """A map in this process that stops the audit once it has run ``described`` jobs that
    describe films (or ``verified`` jobs that verify a pair, ``aligned`` jobs that check a
    verified pair's frames, or ``hashed`` jobs that hash a row group), keeping the names of the
    jobs it ran."""

    def __init__(
        self,
        described: int | None = None,
        verified: int | None = None,
        aligned: int | None = None,
        hashed: int | None = None,
    ) -> None:
        self.stop_after = {
            "_describe_group": described,
            "_verify": verified,
            "_aligned": aligned,
            "_hash_group": hashed,
        }
        self.ran: list[str] = []

    def __call__(
        self, function: Callable[[Any], Any], jobs: Sequence[Any], chunksize: int = 1
    ) -> Iterator[Any]:
        name = getattr(function, "__name__", None) or function.func.__name__  # type: ignore[attr-defined]
        for job in jobs:
            if self.ran.count(name) == self.stop_after.get(name):
                raise Stopped
            self.ran.append(name)
            yield function(job)


def counting_descriptions(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the films the visit check describes (one entry a film)."""
    described: list[int] = []
    describe = curation.leaks.visits.visit_features_of

    def counted(data: bytes) -> Any:
        described.append(1)
        return describe(data)

    monkeypatch.setattr(curation.leaks.visits, "visit_features_of", counted)
    return described


def counting_hashes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the films the audit hashes (one entry a film)."""
    hashed: list[int] = []
    hash_film = curation.leaks.scan.hash_film

    def counted(*args: Any, **kwargs: Any) -> Any:
        hashed.append(1)
        return hash_film(*args, **kwargs)

    monkeypatch.setattr(curation.leaks.scan, "hash_film", counted)
    return hashed


def stored_features(out: Path) -> list[Path]:
    return sorted((out / WORK_FOLDER / VISIT_FEATURES).rglob("*.arrays"))


def test_an_audit_stopped_midway_resumes_from_the_features_it_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    target = write_target(tmp_path / "target")
    whole = run_audit(str(target), permutations=99, map=StoppingMap(), work_below=tmp_path / "w")
    write_report(whole, tmp_path / "whole")
    distinct = 2 * FILMS - 1  # one test film is a byte copy of a train film

    out = tmp_path / "out"
    with pytest.raises(Stopped):  # two row groups of four films described, then stopped
        run_audit(str(target), permutations=99, map=StoppingMap(described=2), work_below=out)
    kept = stored_features(out)
    assert len(kept) == 8

    described = counting_descriptions(monkeypatch)
    resumed = run_audit(str(target), permutations=99, map=StoppingMap(), work_below=out)
    assert len(described) == distinct - len(kept)
    assert not (out / WORK_FOLDER).exists()  # removed once the audit is done
    write_report(resumed, out)
    assert (out / "report.json").read_bytes() == (tmp_path / "whole" / "report.json").read_bytes()


def test_an_audit_stopped_while_verifying_neither_searches_nor_verifies_again_what_it_had(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """At a million rows the search for pairs to verify took some 50 minutes and the
    verification over half an hour: a resumed audit reads the search's pairs and the windows
    of pairs it verified, and verifies only the others."""
    monkeypatch.setattr(curation.visits.find, "PAIRS_AT_ONCE", 4)
    target = write_target(tmp_path / "target")
    whole_map = StoppingMap()
    whole = run_audit(str(target), permutations=99, map=whole_map, work_below=tmp_path / "w")
    write_report(whole, tmp_path / "whole")
    pairs = whole_map.ran.count("_verify")
    assert pairs > 8 and whole_map.ran.count("_tile") >= 1

    out = tmp_path / "out"
    with pytest.raises(Stopped):  # two windows of four pairs verified, then stopped
        run_audit(str(target), permutations=99, map=StoppingMap(verified=10), work_below=out)
    described, hashed = counting_descriptions(monkeypatch), counting_hashes(monkeypatch)
    resumed_map = StoppingMap()
    resumed = run_audit(str(target), permutations=99, map=resumed_map, work_below=out)
    assert described == [] and hashed == []
    assert resumed_map.ran.count("_tile") == 0  # the search's pairs read
    assert resumed_map.ran.count("_verify") == pairs - 8
    write_report(resumed, out)
    assert (out / "report.json").read_bytes() == (tmp_path / "whole" / "report.json").read_bytes()
    assert len(resumed.visits) >= 1


def test_an_audit_stopped_while_aligning_checks_again_only_the_batches_it_had_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """At a million rows some 7,000 pairs were verified as one patient's, and each then gets
    the aligned check (both films decoded and described with ORB, aligned, compared): a batch
    of checks is kept in the work folder with its evidence, so a resumed audit checks only the
    batches it had not, and draws the same matches."""
    monkeypatch.setattr(curation.leaks.visits, "PAIRS_AT_ONCE", 2)
    target = write_target(tmp_path / "target", copies=3)
    whole_map = RecordingMap()
    whole = run_audit(str(target), permutations=99, map=whole_map, work_below=tmp_path / "w")
    write_report(whole, tmp_path / "whole")
    checked = [result for name, result in whole_map.seen if name == "_aligned result"]
    pairs = len(checked)
    assert pairs >= 3
    for (worker, _), kept in zip(checked, whole.visit_fits.values(), strict=True):
        assert len(kept.points_a) == worker.inliers > 0  # the inliers as the worker found them
        assert np.array_equal(kept.points_a, worker.points_a)
        assert np.array_equal(kept.points_b, worker.points_b)

    out = tmp_path / "out"
    with pytest.raises(Stopped):  # one batch of two pairs checked, then stopped
        run_audit(str(target), permutations=99, map=StoppingMap(aligned=2), work_below=out)
    resumed_map = StoppingMap()
    resumed = run_audit(str(target), permutations=99, map=resumed_map, work_below=out)
    assert resumed_map.ran.count("_verify") == 0
    assert resumed_map.ran.count("_aligned") == pairs - 2
    write_report(resumed, out)
    assert (out / "report.json").read_bytes() == (tmp_path / "whole" / "report.json").read_bytes()
    drawings = sorted((tmp_path / "whole" / "visits").glob("*.png"))
    assert len(drawings) == pairs  # the kept batch's inliers drawn as the whole run drew them
    assert [(out / "visits" / d.name).read_bytes() for d in drawings] == [
        d.read_bytes() for d in drawings
    ]


def test_an_audit_stopped_while_hashing_hashes_again_only_the_row_groups_it_had_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """At a million rows the hashing took about 13 minutes on two nodes: a row group's hashes
    are kept in the work folder, known by its shard's path, size and modification time, so
    the next audit hashes only the others, and a shard written again is hashed again."""
    target = write_target(tmp_path / "target")
    whole = run_audit(str(target), permutations=99, map=StoppingMap(), work_below=tmp_path / "w")
    write_report(whole, tmp_path / "whole")

    out = tmp_path / "out"
    with pytest.raises(Stopped):  # two row groups of four rows hashed, then stopped
        run_audit(str(target), permutations=99, map=StoppingMap(hashed=2), work_below=out)
    hashed = counting_hashes(monkeypatch)
    with pytest.raises(Stopped):  # stopped again, once the films are described
        run_audit(str(target), permutations=99, map=StoppingMap(verified=0), work_below=out)
    assert len(hashed) == 2 * FILMS - 8
    hashed.clear()
    train = next(target.glob("train-*.parquet"))
    train.write_bytes(train.read_bytes())  # the same bytes, written again: a new time
    resumed = run_audit(str(target), permutations=99, map=StoppingMap(), work_below=out)
    assert len(hashed) == FILMS  # the train shard's rows, none of the test shard's
    write_report(resumed, out)
    assert (out / "report.json").read_bytes() == (tmp_path / "whole" / "report.json").read_bytes()


def test_an_audit_stopped_after_its_checks_by_hash_runs_none_of_them_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """At a million rows the checks by hash took about 12 minutes on two nodes (the pixel
    digests, the searches between splits, the range searches upright and turned): each
    search's results and each row group's digests are kept in the work folder, so an audit
    stopped after them decodes, searches and ranges over none of them again."""
    target = write_target(tmp_path / "target")
    whole = run_audit(str(target), permutations=99, map=StoppingMap(), work_below=tmp_path / "w")
    write_report(whole, tmp_path / "whole")

    out = tmp_path / "out"
    with pytest.raises(Stopped):  # stopped at the first row group to describe
        run_audit(str(target), permutations=99, map=StoppingMap(described=0), work_below=out)
    done: list[str] = []
    for module, name in (
        (curation.leaks.identical, "pixels_digest"),
        (curation.leaks.nearest, "one_openmp_thread"),  # each block's faiss search
        (curation.hashes.mapped_pairs, "_here"),  # each small range search
        (curation.hashes.mapped_pairs, "table_pairs"),  # each table of a large one
    ):
        function = getattr(module, name)
        monkeypatch.setattr(
            module, name, lambda *a, f=function, n=name, **k: done.append(n) or f(*a, **k)
        )
    resumed = run_audit(str(target), permutations=99, map=StoppingMap(), work_below=out)
    assert done == []
    write_report(resumed, out)
    assert (out / "report.json").read_bytes() == (tmp_path / "whole" / "report.json").read_bytes()
    assert resumed.same_bytes and resumed.closest and resumed.pairs  # the checks found some


def test_stored_features_are_not_read_while_describing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A resumed audit of a million films would read some 20 GB only to count descriptors."""
    target = write_target(tmp_path / "target")
    shards = sorted(target.glob("*.parquet"))
    films = run_audit(str(target), permutations=99, map=StoppingMap(), visits=False).films
    store = ArrayStore(tmp_path / "store", DESCRIPTORS_VERSION)
    read: list[str] = []
    stored = curation.leaks.visits.stored_features
    monkeypatch.setattr(
        curation.leaks.visits, "stored_features", lambda s, k: read.append(k) or stored(s, k)
    )
    assert describe_films(shards, "image", films, store, StoppingMap()) == 2 * FILMS - 1
    assert describe_films(shards, "image", films, store, StoppingMap()) == 0
    assert read == []


def test_the_command_says_it_resumes(tmp_path: Path):
    target = write_target(tmp_path / "target")
    out = tmp_path / "out"
    with pytest.raises(Stopped):
        run_audit(str(target), permutations=99, map=StoppingMap(described=1), work_below=out)
    args = ["audit", str(target), "--out", str(out), "--permutations", "99", "--workers", "1"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1, result.output  # the copied film leaks
    assert f"{out}: resuming an audit that stopped midway" in " ".join(result.output.split())
    assert not (out / WORK_FOLDER).exists()


def test_a_second_audit_into_a_report_folder_in_use_is_refused_in_one_sentence(tmp_path: Path):
    target = write_target(tmp_path / "target")
    out = tmp_path / "out"
    out.mkdir()
    with FileLock(out / LOCK_NAME):
        result = CliRunner().invoke(app, ["audit", str(target), "--out", str(out)])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert lines == [
        f"{out}: another pericurate command is using this report folder, so 'audit' did not "
        "start; wait for it to finish or use another report folder."
    ]
    assert sorted(p.name for p in out.iterdir()) == [LOCK_NAME]


def test_the_command_shows_a_bar_for_each_long_piece_of_work(tmp_path: Path):
    """Hashing, the checks by hash, describing, the films' vectors, the search for pairs to
    verify and the verification each take from ten minutes to hours at a million rows: each
    has a bar, counted to its end."""
    target = write_target(tmp_path / "target")
    args = ["audit", str(target), "--out", str(tmp_path / "out"), "--permutations", "99"]
    result = CliRunner().invoke(app, [*args, "--workers", "1"])
    assert result.exit_code == 1, result.output
    bars = {
        line.split("━")[0].strip(): line.split()[-2]
        for line in result.output.splitlines()
        if "━" in line and line.split()[-1].count(":") == 2
    }
    long_work = {"hash films", "hash checks", "describe films", "film vectors"}
    assert bars.keys() == {*long_work, "search nearest films", "verify pairs"}, result.output
    assert bars["hash films"] == f"{2 * FILMS}/{2 * FILMS}"
    assert bars["describe films"] == f"{2 * FILMS}/{2 * FILMS}"
    assert bars["film vectors"] == f"{2 * FILMS}/{2 * FILMS}"
    for name in ("hash checks", "search nearest films", "verify pairs"):
        done, total = bars[name].split("/")
        assert done == total and int(total) >= 1, name


def test_an_audit_that_fails_after_it_kept_work_keeps_it_for_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A report folder the audit made is removed when the audit fails, unless it holds the
    films' features: a film found unreadable while describing must not cost the films
    described before it. One that fails before it described any is removed."""
    target = write_target(tmp_path / "target")
    out = tmp_path / "out"
    described = 0

    def unreadable(shards: Any, image: Any, films: list[Any], *args: Any) -> int:
        nonlocal described
        described = describe_films(shards, image, films[:described], *args)
        raise AuditError(f"{target}: row 3 is missing on re-read.")

    monkeypatch.setattr(curation.leaks.visits, "describe_films", unreadable)
    args = ["audit", str(target), "--out", str(out), "--permutations", "99", "--workers", "1"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert result.output.splitlines()[-1] == f"{target}: row 3 is missing on re-read."
    assert not out.exists()  # no film described: nothing to keep
    described = 4
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert described == 4 and (out / WORK_FOLDER).is_dir()
