"""``pericurate audit TARGET``: a reviewer's check that published splits do not leak.

Nothing stored is trusted: every hash is recomputed from the image bytes. Rows are read one
parquet row group at a time, a row group per worker process on every core, and only the
codes, labels and referral fields are kept, so memory is bounded by the hash table and a few
images per core (``curation.leaks.target.IMAGES_AT_ONCE``), not by the images. Films with the
same bytes in one split are compared through one of them and counted for all
(``curation.leaks.identical.representatives``): a group of identical films costs memory in
proportion to its size, not its square. The permutation tests run on every core too.

Checks: film ids naming rows of more than one split, cross-split pairs within the threshold
(512-bit average hash; with ``--method``, also 64-bit ``phash``/``dhash`` from imagehash at
the threshold scaled to their width, ``round(threshold * 64 / 512)``, i.e. 4 bits for the
default 30), exact duplicates (same
bytes; same decoded pixels, decoded at full size only for films whose header and hash
leave it possible), stored cluster ids against the recomputed look-alike components,
groups spanning splits, clinical hint terms in referrals, and a permutation test of
association between each referral field and the labels.
"""

from __future__ import annotations

import shutil
import tempfile
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from curation.core.vocabulary import LOOKALIKE_DISTANCE, Decode, VisitSearch

if TYPE_CHECKING:
    from curation.core.parallel import Mapper
    from curation.core.progress import Track
    from curation.leaks.leakage import Audit
    from curation.leaks.target import Columns

METHODS = ("ahash", "phash", "dhash")
DEFAULT_PERMUTATIONS = 9999
VISIT_FEATURES = "visit-features"  # the store of the workers' visit features, below the work folder
WORK_FOLDER = ".pericurate-audit-work"  # below the report's folder, until the audit is done


@contextmanager
def work_folder(below: Path | None) -> Iterator[Path]:
    """``below/WORK_FOLDER``, removed once the block is done but kept when it stops midway
    (killed, interrupted, failed): what the audit keeps there (the checks' searches and
    digests, the films' visit features, the visit search's pairs, verified windows and
    aligned checks) is keyed by what it was computed from, so the next audit into the same
    folder reads it again instead of doing the work anew (hours at a million rows). Without
    ``below``, a new temporary folder, always removed."""
    if below is None:
        with tempfile.TemporaryDirectory(prefix=f"{WORK_FOLDER}-") as temporary:
            yield Path(temporary)
        return
    folder = below / WORK_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    yield folder
    shutil.rmtree(folder)


def run_audit(
    target: str,
    columns: Columns | None = None,
    threshold: int = LOOKALIKE_DISTANCE,
    methods: tuple[str, ...] = ("ahash",),
    permutations: int = DEFAULT_PERMUTATIONS,
    seed: int = 0,
    decode: Decode = Decode.draft,
    track: Track | None = None,
    visits: bool = True,
    map: Mapper | None = None,
    work_below: Path | None = None,
    visit_search: VisitSearch = VisitSearch.auto,
) -> Audit:
    """Read the target, recompute every hash and run every check (``visits``: also match
    local features across splits, ``curation.leaks.visits``, the pairs to verify searched as
    ``visit_search`` says); per-file work through ``map`` (an executor's,
    ``curation.chain.executors``; default: this machine's cores), the hashing, the checks by
    hash, the describing, the vectors, the search and the verifying each reported to a bar of
    ``track``. The row groups' hashes, what the checks by hash searched and decoded, the
    workers' visit features and what the visit check searched and verified go to a work
    folder below ``work_below`` (``work_folder``: kept by an audit that stops midway, for the
    next; default: the temporary folder, the hashes not kept), which every worker must see at
    the same path."""
    # The checks' modules import numpy, faiss, networkx and pyarrow: imported here, so that
    # `pericurate audit --help` stays as fast as the other commands' help.
    from curation.audit.decided import apply_decisions
    from curation.core.parallel import CountingMap, LocalMap
    from curation.core.store import ArrayStore
    from curation.hashes.hashing import AverageHash512
    from curation.leaks.identical import fill_pixels, representatives
    from curation.leaks.leakage import (
        CLOSEST_PAIRS,
        Audit,
        Pair,
        check_clusters,
        check_groups,
        closest_pairs,
        cross_split_pairs,
        findings,
        method_threshold,
        nearest_to_train,
        order_splits,
        reused_ids,
        same_content,
        sorted_pairs,
    )
    from curation.leaks.nearest import split_searches
    from curation.leaks.referrals import associations, find_hints
    from curation.leaks.scan import hash_store, scan
    from curation.leaks.target import (
        AuditError,
        Columns,
        count_rows,
        find_shards,
        resolve_columns,
        resolve_target,
    )
    from curation.leaks.turned import turned_same_picture
    from curation.leaks.visits import cross_split_matches, describe_films
    from curation.visits.descriptors import DESCRIPTORS_VERSION
    from curation.visits.find import chosen_search

    columns = columns or Columns()
    unknown = sorted(set(methods) - set(METHODS))
    if unknown:
        raise AuditError(f"Unknown hash method {unknown[0]!r}; choose from {', '.join(METHODS)}.")
    methods = tuple(m for m in METHODS if m in {"ahash", *methods})
    shards_folder = resolve_target(target)
    shards = find_shards(shards_folder)
    names = resolve_columns(shards, columns)
    hashing = track("hash films", count_rows(shards)) if track else None
    hasher = AverageHash512(decode)
    image = names["image"] or columns.image
    kept = hash_store(work_below / WORK_FOLDER, hasher, methods, image) if work_below else None
    films = scan(shards, names, hasher, methods, hashing.advance if hashing else None, map, kept)
    splits = order_splits({f.split for f in films})
    if len(splits) < 2:
        raise AuditError(
            f"{target}: found only the split {splits[0] if splits else '(none)'}; name the files "
            "train-/validation-/test-... or pass --split-column."
        )
    thresholds = {m: method_threshold(m, threshold) for m in methods}
    rep_of = representatives(films)
    reps = sorted(set(rep_of))
    rep_films = [films[i] for i in reps]
    with work_folder(work_below) as folder:  # the searches' codes, the visit features
        # The checks by hash: some minutes of jobs at a million rows, counted on one bar.
        checking = CountingMap(map or LocalMap(), track("hash checks", None) if track else None)
        fill_pixels(films, shards, columns.image, folder, checking)
        searches = split_searches(films, splits, folder, CLOSEST_PAIRS, checking)
        pairs = [
            Pair(p.method, p.distance, reps[p.a], reps[p.b])
            for m in methods
            for p in cross_split_pairs(rep_films, splits, m, thresholds[m], folder, checking)
        ]
        audit = Audit(
            target=target,
            shards=shards,
            columns=names,
            films=films,
            splits=splits,
            thresholds=thresholds,
            hash_version=hasher.version,
            pairs=sorted_pairs(films, pairs),
            turned=[],
            closest=closest_pairs(films, splits, searches),
            nearest=nearest_to_train(searches),
            same_bytes=same_content(films, lambda f: f.sha256),
            same_pixels=same_content(films, lambda f: f.pixels),
            clusters=(
                check_clusters(films, threshold, rep_of, folder, checking)
                if names["cluster"]
                else None
            ),
            groups=check_groups(films) if names["group"] else None,
            hints=find_hints(films),
            associations=associations(films, permutations, seed),
            permutations=permutations,
            seed=seed,
        )
        audit.copies = {r: n for r, n in Counter(rep_of).items() if n > 1}
        turned = turned_same_picture(
            [f.split for f in rep_films],
            [f.ahash for f in rep_films],
            [f.turned for f in rep_films],
            lambda index: audit.image_bytes(rep_films[index]),
            folder,
            checking,
        )
        checking.finish()
        audit.turned = [replace(p, a=reps[p.a], b=reps[p.b]) for p in turned]
        audit.visit_search = chosen_search(visit_search, len(rep_films))
        if visits:
            store = ArrayStore(folder / VISIT_FEATURES, DESCRIPTORS_VERSION)
            store.drop_other_versions()  # an earlier audit's, by another descriptor
            describing = track("describe films", len(rep_films)) if track else None
            describe_films(
                shards,
                image,
                rep_films,
                store,
                map,
                describing.advance if describing else None,
            )
            matches, fits = cross_split_matches(
                rep_films,
                store,
                splits,
                lambda index: audit.image_bytes(rep_films[index]),
                map,
                audit.visit_search,
                track,
            )
            audit.visits = [replace(m, a=reps[m.a], b=reps[m.b]) for m in matches]
            audit.visit_fits = {(reps[a], reps[b]): fit for (a, b), fit in fits.items()}
    audit.reused_ids = reused_ids(films)
    apply_decisions(audit, shards_folder)  # a build's decisions.toml, when it has one
    audit.findings = findings(audit)
    return audit
