"""Where the chain runs: on this machine, or with its per-file work on a Ray cluster.

An executor runs the declared steps (``curation.chain.chain``) in order; the steps do not know
where they run. ``LocalExecutor`` leaves the per-file work to the steps (worker processes
over this machine's cores). ``RayExecutor`` (extra ``pericurate[ray]``) runs the same steps
but hands the index step a reader and the hash step a hasher that do the expensive parts,
reading every file (digest, header, XML) and decoding and hashing every film, on Ray Data
workers that read the bytes themselves (a folder on shared storage, or any filesystem Ray
Data reads). The steps' caches and decisions are unchanged, so both give the same records.
A film whose hash fails on a worker is decoded again by the hash step, which records why.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import time
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from curation.chain.chain import Executor, Products, Run, Step, StepTime
from curation.core.errors import PericurateError
from curation.core.records import Kind
from curation.core.vocabulary import ExecutorName
from curation.hashes.hashing import AverageHash512, Decode, View
from curation.index.index import FileFacts, file_facts, file_kind
from curation.index.voc import RawBox


class LocalExecutor:
    """Every step in this process; the steps spread their per-file work over local cores."""

    def __init__(self) -> None:
        self.times: list[StepTime] = []

    def run(self, steps: Sequence[Step], run: Run) -> Products:
        products: Products = {}
        for step in steps:
            wall, cpu = time.perf_counter(), _cpu_seconds()
            products = step.apply(run, products)
            self.times.append(StepTime(step.name, time.perf_counter() - wall, _cpu_seconds() - cpu))
        return products


def _cpu_seconds() -> float:
    """CPU seconds of this process and of its joined children: a step's worker pools are
    shut down inside the step, so their time is counted in the step that started them."""
    spent = os.times()
    return spent.user + spent.system + spent.children_user + spent.children_system


class RayExecutor(LocalExecutor):
    """The same steps, reading and hashing files on Ray. Connects to the cluster that
    ``RAY_ADDRESS`` names, else starts a local one (and stops what it started)."""

    def run(self, steps: Sequence[Step], run: Run) -> Products:
        ray = _import_ray()
        started = not ray.is_initialized()
        if started:
            quiet_ray_init(ray)
        try:
            on_ray = dataclasses.replace(run, reader=read_facts_on_ray, hasher=hash_on_ray)
            return super().run(steps, on_ray)
        finally:
            if started:
                ray.shutdown()


def quiet_ray_init(ray: ModuleType) -> None:
    """``ray.init`` with Ray's own messages kept out of the terminal: workers' output, Ray
    Data's plans and progress stay in the session's log folder, which one line names; the
    steps' own progress bars are the ones shown. Errors still reach the terminal."""
    import logging
    import sys

    import ray.data

    context = ray.init(log_to_driver=False, logging_level=logging.ERROR)
    ray.data.DataContext.get_current().enable_progress_bars = False
    for handler in logging.getLogger("ray.data").handlers:  # its file handler keeps all
        if isinstance(handler, logging.StreamHandler):
            handler.setLevel(logging.ERROR)
    print(f"Ray's logs: {context.address_info['session_dir']}/logs", file=sys.stderr)


def executor_for(name: ExecutorName) -> Executor:
    return RayExecutor() if name is ExecutorName.ray else LocalExecutor()


def _import_ray() -> ModuleType:
    # Under `uv run`, Ray would start every worker through `uv run` again; the environment is
    # already complete, so workers use this interpreter unless the user says otherwise.
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    try:
        import ray
    except ImportError:
        raise PericurateError(
            "--executor ray needs Ray, which is not installed: install pericurate[ray]."
        ) from None
    return ray


def _hash_batch(batch: dict[str, Any], decode: Decode) -> dict[str, list]:
    """Ray Data batch function: file bytes and path in, the five views out (failures empty)."""
    hasher = AverageHash512(decode)
    out: dict[str, list] = {"path": [], "ok": [], **{v.value: [] for v in View}}
    for data, path in zip(batch["bytes"], batch["path"], strict=True):
        try:
            views = hasher.hash_views(io.BytesIO(data), strict=True)
        except Exception:  # the hash step decodes this film again and records why it failed
            views = dict.fromkeys(View, b"")
        out["path"].append(path)
        out["ok"].append(all(views.values()))
        for view in View:
            out[view.value].append(views[view])
    return out


def hash_on_ray(
    jobs: list[tuple[str, Decode]], batch_size: int = 8
) -> list[dict[View, bytes] | None]:
    """The ``FilmHasher`` of the hash step that hashes on Ray Data: views per job, in order,
    None for a film that failed there."""
    if not jobs:
        return []
    ray = _import_ray()
    paths = [os.path.abspath(path) for path, _ in jobs]  # workers have their own cwd
    dataset = ray.data.read_binary_files(paths, include_paths=True).map_batches(
        _hash_batch, fn_kwargs={"decode": jobs[0][1]}, batch_size=batch_size, batch_format="numpy"
    )
    found = {
        str(row["path"]): {v: bytes(row[v.value]) for v in View}
        for row in dataset.iter_rows()
        if row["ok"]
    }
    return [found.get(path) for path in paths]


def _facts_batch(batch: dict[str, Any]) -> dict[str, list]:
    """Ray Data batch function: file bytes and path in, the fields of ``file_facts`` out."""
    out: dict[str, list] = {"path": [], "sha256": [], "size": [], "problem": []}
    out.update({"width": [], "height": [], "boxes": [], "encoder": [], "patient_number": []})
    for data, path in zip(batch["bytes"], batch["path"], strict=True):
        facts = file_facts(bytes(data), file_kind(str(path)))
        out["path"].append(path)
        for name in ("sha256", "size", "problem", "width", "height", "encoder"):
            out[name].append(getattr(facts, name))
        out["boxes"].append(json.dumps([dataclasses.asdict(box) for box in facts.boxes]))
        out["patient_number"].append(facts.patient_number or "")  # in memory, never written
    return out


def read_facts_on_ray(jobs: list[tuple[str, Kind]], batch_size: int = 64) -> list[FileFacts]:
    """The ``FactsReader`` of the index step that reads the files on Ray Data."""
    if not jobs:
        return []
    ray = _import_ray()
    dataset = ray.data.read_binary_files(
        [path for path, _ in jobs], include_paths=True
    ).map_batches(_facts_batch, batch_size=batch_size, batch_format="numpy")
    found = {
        str(row["path"]): FileFacts(
            str(row["sha256"]),
            int(row["size"]),
            str(row["problem"]),
            int(row["width"]),
            int(row["height"]),
            tuple(RawBox(**box) for box in json.loads(str(row["boxes"]))),
            encoder=str(row["encoder"]),
            patient_number=str(row["patient_number"]) or None,
        )
        for row in dataset.iter_rows()
    }
    return [found[path] for path, _ in jobs]
