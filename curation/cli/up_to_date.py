"""``@skip_when_unchanged(command)``: a command whose inputs, parameters, code and outputs are
as its last successful run left them says so in one line and does nothing.

The inputs of each command and the outputs of the commands outside the chain are declared
here (``PLANS``); a chain step's build files are declared on the step
(``curation.chain.chain.Step.outputs``). A command has a ``--force`` option of its own (run
anyway). The check runs before the
command imports anything heavy (the command modules import numpy, pyarrow and the Hub client
inside their functions), so a no-op costs the interpreter, typer and a few file reads.
``agreement``'s result is what it prints on stdout, so that is printed again; the other
commands' progress and summary tables are not (their figures stay in ``curation.json``).

- ``download``: inputs a local zip by stat, a folder by its names (two levels), a URL by
  itself; outputs ``work/source.json``, the lock, the extraction marker, a downloaded zip.
- the steps and ``build``: inputs ``work/source.json``, an archive's extraction by the
  archive's sha256 (in that record) and its names, a folder source by every file's stat,
  and the curator's ``decisions.toml`` by its content;
  outputs ``work/NN-step.parquet``, and for ``build`` the dataset shards, manifest, clusters,
  agreement, ``curation.json`` and ``review/``.
- ``card``: inputs ``curation.json``, ``agreement.parquet`` and the shards' footers; outputs
  the files in ``dataset/`` (the card and licences).
- ``agreement``: input ``agreement.parquet``; its output is what it prints.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import io
import json
import re
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TextIO, TypeVar
from urllib.parse import urlsplit

import typer

from curation.cli.fingerprint import (
    Identity,
    by_content,
    by_stat,
    folder_names,
    folder_stats,
    parquet_footer,
    read_record,
    run_key,
    unchanged,
    write_record,
)
from curation.source.source import lock_path

Command = TypeVar("Command", bound=Callable[..., Any])
Result = TypeVar("Result")
Force = Annotated[
    bool,
    typer.Option(
        "--force", help="Run even when inputs, parameters and code are unchanged since last run."
    ),
]
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@dataclass(frozen=True)
class Plan:
    """Where a command's fingerprint lives, what it depends on and what it leaves behind."""

    record: Path
    parameters: dict[str, Any]
    inputs: Callable[[], dict[str, Identity]]
    outputs: Callable[[], list[Path]]
    replays_stdout: bool = False  # stdout is the command's result, not progress


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else []


def _parameters(arguments: dict[str, Any]) -> dict[str, Any]:
    """Arguments as JSON: paths absolute, so ``build`` and ``./build`` are one folder."""
    return {
        name: str(value.resolve()) if isinstance(value, Path) else value
        for name, value in sorted(arguments.items())
    }


def _record(build: Path, command: str) -> Path:
    return build / "work" / f"{command}.fingerprint"


def download_plan(arguments: dict[str, Any]) -> Plan:
    """``pericurate download``: the source folder or local archive read; the source record,
    the lock, the extraction marker (and a fetched archive) left behind."""
    source, build = str(arguments["source"]), arguments["build"]
    lock = lock_path(build, arguments["lock"])
    remote = urlsplit(source).scheme in ("http", "https")
    archive = Path(source)
    if remote:
        from curation.source.download import download_name

        archive = build / "downloads" / download_name(source)

    def inputs() -> dict[str, Identity]:
        if remote:
            return {}  # the URL is a parameter; the zip it gives is an output
        if archive.is_dir():
            return {"folder": folder_names(archive, depth=2)}
        return {"archive": by_stat(archive)}

    def outputs() -> list[Path]:
        from curation.source.extract import MARKER_NAME  # imported by the run already

        made = [build / "work" / "source.json", lock]
        if remote or not archive.is_dir():
            stem = archive.name.removesuffix(".zip")
            made.append(build / "extracted" / stem / MARKER_NAME)
        return [*made, archive] if remote else made

    return Plan(_record(build, "download"), _parameters(arguments), inputs, outputs)


def step_plan(step: str, arguments: dict[str, Any]) -> Plan | None:
    """A chain step (``index`` ... ``build``); ``None`` without a readable source record,
    so the command runs and says what is wrong."""
    build: Path = arguments["build"]
    source_file = build / "work" / "source.json"
    try:
        source = json.loads(source_file.read_text(encoding="utf-8"))
        root, archive_sha256 = Path(source["root"]), source["sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        return None

    def inputs() -> dict[str, Identity]:
        from curation.decisions.decisions import DECISIONS_NAME

        tree = folder_names(root) if archive_sha256 else folder_stats(root)
        decisions = by_content(build / DECISIONS_NAME)  # the curator's, beside the lock
        return {"source.json": by_content(source_file), "source": tree, DECISIONS_NAME: decisions}

    def outputs() -> list[Path]:
        from curation.chain.chain import through

        made = sorted((build / "work").glob(f"[0-9][0-9]-{step}.parquet"))
        for name in through(step)[-1].outputs:  # the step's declared build files
            made += _files(build / name) if name.endswith("/") else [build / name]
        return made

    return Plan(_record(build, step), _parameters(arguments), inputs, outputs)


def card_plan(arguments: dict[str, Any]) -> Plan:
    """``pericurate card``: the summary, agreement file and shards read, the dataset
    folder's files written."""
    build: Path = arguments["build"]
    dataset = build / "dataset"

    def inputs() -> dict[str, Identity]:
        shards = {f"shard {p.name}": parquet_footer(p) for p in _files(dataset / "data")}
        return {
            "curation.json": by_content(build / "curation.json"),
            "agreement.parquet": by_content(build / "agreement.parquet"),
            **shards,
        }

    def outputs() -> list[Path]:
        return sorted(p for p in dataset.iterdir() if p.is_file())

    return Plan(_record(build, "card"), _parameters(arguments), inputs, outputs)


def agreement_plan(arguments: dict[str, Any]) -> Plan:
    """``pericurate agreement``: the agreement file read; its printed result replayed when
    up to date."""
    build: Path = arguments["build"]
    return Plan(
        _record(build, "agreement"),
        _parameters(arguments),
        lambda: {"agreement.parquet": by_content(build / "agreement.parquet")},
        list,
        replays_stdout=True,
    )


PLANS: dict[str, Callable[[dict[str, Any]], Plan | None]] = {
    "download": download_plan,
    "card": card_plan,
    "agreement": agreement_plan,
}


def plan_for(command: str, arguments: dict[str, Any]) -> Plan | None:
    """The plan of ``command`` (any other name is a chain step)."""
    if command in PLANS:
        return PLANS[command](arguments)
    return step_plan(command, arguments)


class _Tee(io.TextIOBase):
    """Writes go to ``stream`` and are kept, so a run's stdout can be shown again."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.kept = io.StringIO()

    def write(self, text: str) -> int:
        self.kept.write(text)
        return self.stream.write(text)

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return self.stream.isatty()

    def fileno(self) -> int:
        return self.stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]  # TextIOBase's is an attribute
        return getattr(self.stream, "encoding", None) or "utf-8"


@contextlib.contextmanager
def _kept_stdout() -> Iterator[_Tee]:
    tee = _Tee(sys.stdout)
    with contextlib.redirect_stdout(tee):
        yield tee


def run_unless_unchanged(
    command: str, arguments: dict[str, Any], force: bool, body: Callable[[], Result]
) -> Result | None:
    """``body()``, unless nothing ``command`` depends on changed since its last successful run
    with these ``arguments`` (then one line says so); ``force`` runs it anyway."""
    plan = plan_for(command, arguments)
    if plan is None:
        return body()
    started = time.time_ns()
    inputs = plan.inputs()
    key = run_key(command, plan.parameters)
    record = read_record(plan.record)
    if not force and unchanged(record, key, inputs):
        assert record is not None
        sys.stdout.write(str(record.get("stdout", "")))
        sys.stdout.flush()
        print(
            f"{command}: up to date (inputs, parameters and code unchanged since its "
            "last run; --force runs it again).",
            file=sys.stderr,
        )
        return None
    if not plan.replays_stdout:
        result = body()
        write_record(plan.record, key, inputs, plan.outputs(), "", started)
        return result
    with _kept_stdout() as tee:
        result = body()
    stdout = ANSI.sub("", tee.kept.getvalue())
    write_record(plan.record, key, inputs, plan.outputs(), stdout, started)
    return result


def skip_when_unchanged(command: str) -> Callable[[Command], Command]:
    """Decorate a typer command function that has a ``force: Force`` parameter of its own:
    skip it when nothing it depends on changed (``run_unless_unchanged``)."""

    def decorate(function: Command) -> Command:
        signature = inspect.signature(function)

        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            arguments = dict(bound.arguments)
            force = bool(arguments.pop("force"))
            return run_unless_unchanged(command, arguments, force, lambda: function(**arguments))

        return wrapper  # type: ignore[return-value]  # same call signature as ``function``

    return decorate
