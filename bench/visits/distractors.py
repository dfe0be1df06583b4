"""``python -m bench.visits.distractors``: does the visits step's retrieval find a real revisit
as well among many films as among few, at each width of the projected vectors?

The real development films (``../shared/realfilms-dev``, read in place; the part says so and
stops when they are absent), each at 512 px with its realistic revisit
(``curation.drawing.revisits.revisit``, as ``bench.visits.real`` draws it), are planted among
0, 4,000, 16,000 and 64,000 synthetic distractor films, described as the build describes a
kept film (``visit_features_of`` of a JPEG). For each size the pool's vocabulary is trained as
the build trains it (``sampled_films``, ``film_sample``, ``train_vocabulary``), every film's
VLAD vector computed, and each planted film's nearest films searched (``PARTNERS`` of them,
itself aside) with the vectors as they are and projected on their first principal components
(``VectorProjection``), at several widths. A revisit counts as retrieved when either film of
the pair is among the other's nearest, as ``nearest_films`` proposes pairs; its rank is the
better of the two directions.

The vectors in use (``PROJECTED_WIDTH``, ``WHITENING``) are also searched through an inverted
file (``inverted_file``: faiss's ``IndexIVFFlat`` on the lists the build trains, about one a
16 films, ``PROBES_TRIED`` of them searched), the exact search's quadratic cost against a
share of the films: how many lists a query must search to rank the revisits as the exact
search does, at each size; where the list a revisit is filed in stands in its film's order of
the lists (``list_rank``: the lists a query must search at least to meet it); and through the
build's own search of those lists (``curation.visits.inverted``, ``as_built``): which revisits
it pairs.

The widths and whitenings are judged on the two halves of the films (every other film by
name): the narrowest whose chosen half ranks every revisit within half of ``PARTNERS`` at every
size is chosen on that half and reported on both (docs/margins.md). What the search costs at
each width is ``bench.scale.audit_search``'s.

Distractors (a patient and one shot of the sample's generator, its grain, JPEG 90) are made in
chunks of 1,000 films, one seed each, and cached under ``bench/corpus/`` (git-ignored).

    uv run --frozen python -m bench.visits.distractors --sizes 0,4000,16000,64000
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from pathlib import Path

import faiss
import numpy as np

from bench.common.corpus import CORPUS_DIR
from bench.common.distractor_films import distractor_jpegs
from bench.common.real_films import REAL_FILMS, absent
from bench.visits.real import NATIVE_FILMS, _grey
from curation.core.atomic import write_json
from curation.core.parallel import ordered_map
from curation.drawing.revisits import revisit
from curation.hashes.mapped_pairs import one_openmp_thread
from curation.visits.descriptors import (
    DESCRIPTORS_VERSION,
    VisitFeatures,
    visit_features,
    visit_features_of,
)
from curation.visits.inverted import (
    inverted_nearest,
    list_count,
    probe_count,
    rows_of,
    train_lists,
)
from curation.visits.retrieval import (
    PARTNERS,
    PROJECTED_WIDTH,
    WHITENING,
    VectorProjection,
    film_sample,
    projection_films,
    sampled_films,
    train_projection,
    train_vocabulary,
)

RESULTS = Path(__file__).with_name("distractors.json")
CHUNK = 1000
SEED = 41
WIDTHS = (256, 512, 1024, 2048)
WHITENINGS = (0.0, 0.5, 1.0)  # each direction divided by its deviation to this power
NOWHERE = np.zeros((0, 2), np.float32)
PROBES_TRIED = (4, 8, 16, 32, 64)  # lists a query searches


def _cache(name: str) -> Path:
    version = hashlib.sha256(DESCRIPTORS_VERSION.encode()).hexdigest()[:12]
    return CORPUS_DIR / f"visit-distractors-{version}" / name


def _save(path: Path, descriptors: list[np.ndarray]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_name(path.name + ".part")
    with scratch.open("wb") as out:
        np.savez(
            out,
            descriptors=np.concatenate(descriptors),
            counts=np.array([len(d) for d in descriptors], np.int64),
        )
    scratch.replace(path)


def _load(path: Path) -> list[np.ndarray]:
    with np.load(path) as stored:
        descriptors, counts = stored["descriptors"], stored["counts"]
    return np.split(descriptors, np.cumsum(counts)[:-1])


def _distractor_chunk(chunk: int) -> int:
    """Worker side: ``CHUNK`` distractor films' visit descriptors, into the cache."""
    rng = np.random.default_rng([SEED, chunk])
    films = [visit_features_of(data).descriptors for data in distractor_jpegs(rng, CHUNK)]
    _save(_cache(f"chunk-{SEED}-{chunk}.npz"), films)
    return chunk


def distractors(count: int, workers: int) -> list[np.ndarray]:
    """The first ``count`` distractors' descriptors, their chunks made when missing."""
    chunks = range(-(-count // CHUNK))
    missing = [c for c in chunks if not _cache(f"chunk-{SEED}-{c}.npz").is_file()]
    for done in ordered_map(_distractor_chunk, missing, workers, 1):
        print(f"distractor chunk {done} made", flush=True)
    films = [f for c in chunks for f in _load(_cache(f"chunk-{SEED}-{c}.npz"))]
    return films[:count]


def _real_job(job: tuple[str, int]) -> tuple[np.ndarray, np.ndarray]:
    path, seed = job
    grey = _grey(path, "512", seed)
    return visit_features(grey).descriptors, visit_features(revisit(grey, seed)).descriptors


def real_pairs(workers: int) -> tuple[list[str], list[np.ndarray]]:
    """Each real film's name, and its descriptors then its revisit's, film after film."""
    paths = sorted(REAL_FILMS.glob("*.jpg")) + sorted(NATIVE_FILMS.glob("*.jpg"))
    path = _cache(f"real-{len(paths)}.npz")
    if not path.is_file():
        jobs = [(str(p), n) for n, p in enumerate(paths)]
        _save(path, [d for pair in ordered_map(_real_job, jobs, workers, 1) for d in pair])
    return [p.stem for p in paths], _load(path)


def _vectors(pool: list[np.ndarray]) -> np.ndarray:
    """The pool's VLAD vectors under a vocabulary trained on the pool as the build trains it."""
    chosen, per_film = sampled_films(len(pool))
    vocabulary = train_vocabulary(np.concatenate([film_sample(pool[n], per_film) for n in chosen]))
    return np.stack([vocabulary.vector(VisitFeatures(NOWHERE, d, (0, 0))) for d in pool])


def _ranks(vectors: np.ndarray, planted: int, index: faiss.Index | None = None) -> np.ndarray:
    """Each planted pair's rank: where the revisit stands among its film's nearest films, or
    the film among its revisit's, whichever is better (1: the nearest, itself aside); the
    films searched exactly unless ``index`` (holding ``vectors``) is given."""
    if index is None:
        index = faiss.IndexFlatIP(vectors.shape[1])
        index.add(np.ascontiguousarray(vectors, np.float32))
    deep = min(len(vectors), 200)
    with one_openmp_thread():
        found = index.search(np.ascontiguousarray(vectors[: 2 * planted]), deep)[1]
    ranks = []
    for n in range(planted):
        film, visit = 2 * n, 2 * n + 1
        forward = [f for f in found[film] if f != film]
        backward = [f for f in found[visit] if f != visit]
        ahead = [
            forward.index(visit) + 1 if visit in forward else deep,
            backward.index(film) + 1 if film in backward else deep,
        ]
        ranks.append(min(ahead))
    return np.array(ranks)


def _spread(ranks: np.ndarray, halves: list[np.ndarray]) -> dict:
    return {
        "retrieved": int((ranks <= PARTNERS).sum()),
        "of": len(ranks),
        "worst_rank": int(ranks.max()),
        "median_rank": float(np.median(ranks)),
        "halves": [
            {"retrieved": int((ranks[h] <= PARTNERS).sum()), "of": len(h),
             "worst_rank": int(ranks[h].max())}
            for h in halves
        ],
    }  # fmt: skip


def list_ranks(centres: np.ndarray, vectors: np.ndarray, planted: int) -> np.ndarray:
    """Each planted pair's list rank: where the list its revisit is filed in (its nearest)
    stands in its film's order of the lists, or the film's in its revisit's, whichever is
    better (1: the film's own nearest list). A pair can be met only when a query searches at
    least that many lists: how much of a margin the lists searched leave."""
    quantizer = faiss.IndexFlatIP(centres.shape[1])
    quantizer.add(centres)
    with one_openmp_thread():
        order = quantizer.search(np.ascontiguousarray(vectors[: 2 * planted]), len(centres))[1]
    ranks = [
        min(
            int(np.flatnonzero(order[film] == order[visit, 0])[0]) + 1,
            int(np.flatnonzero(order[visit] == order[film, 0])[0]) + 1,
        )
        for film, visit in zip(range(0, 2 * planted, 2), range(1, 2 * planted, 2), strict=True)
    ]
    return np.array(ranks)


def inverted_file(projected: np.ndarray, planted: int, halves: list[np.ndarray]) -> dict:
    """The in-use vectors searched through an inverted file (faiss ``IndexIVFFlat``, inner
    product) instead of every film: each planted pair's rank at each number of lists
    searched, the share of the films a query compared, and its CPU. An exact search costs
    every film a query (quadratic in the archive); this costs the probed lists' films."""
    width, lists = projected.shape[1], list_count(len(projected))
    started = time.process_time()
    centres = train_lists(len(projected), width, rows_of(projected))
    quantizer = faiss.IndexFlatIP(width)
    quantizer.add(centres)
    index = faiss.IndexIVFFlat(quantizer, width, lists, faiss.METRIC_INNER_PRODUCT)
    with one_openmp_thread():
        index.add(projected)
    record: dict = {"lists": lists, "training_cpu_s": round(time.process_time() - started, 1)}
    ranks = list_ranks(centres, projected, planted)
    record["list_rank"] = {
        "worst": int(ranks.max()),
        "median": float(np.median(ranks)),
        "halves_worst": [int(ranks[h].max()) for h in halves],
    }
    for probes in PROBES_TRIED:
        index.nprobe = probes
        faiss.cvar.indexIVF_stats.reset()
        started = time.process_time()
        ranks = _ranks(projected, planted, index)
        cpu = time.process_time() - started
        compared = faiss.cvar.indexIVF_stats.ndis / (2 * planted)
        record[f"probe{probes}"] = {
            **_spread(ranks, halves),
            "compared_share": round(compared / len(projected), 4),
            "search_ms_a_film": round(1000 * cpu / (2 * planted), 2),
        }
        print(len(projected), lists, probes, record[f"probe{probes}"], flush=True)
    started = time.process_time()
    pairs = {(int(i), int(j)) for i, j in inverted_nearest(projected, PARTNERS)}
    cpu = time.process_time() - started
    found = np.array([(2 * n, 2 * n + 1) in pairs for n in range(planted)])
    record["as_built"] = {
        "probes": probe_count(lists),
        "retrieved": int(found.sum()),
        "of": planted,
        "halves": [{"retrieved": int(found[h].sum()), "of": len(h)} for h in halves],
        "cpu_s": round(cpu, 1),
        "ms_a_film": round(1000 * cpu / len(projected), 2),
    }
    print(len(projected), "as built", record["as_built"], flush=True)
    return record


def measure(size: int, names: list[str], real: list[np.ndarray], workers: int) -> dict:
    planted = len(names)
    pool = real + distractors(size, workers)
    started = time.process_time()
    vectors = _vectors(pool)
    described = time.process_time() - started
    halves = [np.arange(planted)[0::2], np.arange(planted)[1::2]]
    full = _ranks(vectors, planted)
    record = {"films": len(pool), "vectors_cpu_s": round(described, 1),
              "full": {"width": vectors.shape[1], **_spread(full, halves)}}  # fmt: skip
    started = time.process_time()
    sample = vectors[projection_films(len(vectors))]
    directions = train_projection(sample, max(WIDTHS), whitening=0.0)
    record["training_cpu_s"] = round(time.process_time() - started, 1)
    deviation = ((sample - directions.mean) @ directions.components).std(axis=0)
    for width in WIDTHS:
        for power in WHITENINGS:
            kept = directions.components[:, :width] / deviation[:width] ** power
            projected = VectorProjection(directions.mean, kept.astype(np.float32)).apply(vectors)
            started = time.process_time()
            ranks = _ranks(projected, planted)
            exact_ms = 1000 * (time.process_time() - started) / (2 * planted)
            record[f"pca{width}-w{power}"] = {
                "width": projected.shape[1],
                "whitening": power,
                **_spread(ranks, halves),
                "worse_than_full": int((ranks > np.maximum(full, PARTNERS)).sum()),
            }
            print(size, width, power, record[f"pca{width}-w{power}"], flush=True)
            if (width, power) == (PROJECTED_WIDTH, WHITENING):  # the vectors in use
                record["inverted_file"] = inverted_file(projected, planted, halves)
                record["inverted_file"]["exact_search_ms_a_film"] = round(exact_ms, 2)
    return record


def run(sizes: list[int], workers: int = 2) -> dict:
    """Every size measured, merged into ``distractors.json`` (other sizes' figures kept)."""
    skipped = absent("visit distractors")
    if skipped is not None:
        return skipped
    names, real = real_pairs(workers)
    results = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    results["source"] = (
        "real development films at 512 px with realistic revisits, synthetic distractors"
    )
    for size in sizes:
        results[str(size)] = measure(size, names, real, workers)
        write_json(RESULTS, results)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="0,4000,16000,64000")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    print(json.dumps(run([int(s) for s in args.sizes.split(",")], args.workers), indent=1))


if __name__ == "__main__":
    main()
