"""The publishing commands: ``audit``, ``card``, ``agreement`` and ``push``. Each is a typer
function of its options that calls its logic (``curation.audit``, ``cards``,
``curation.publish.agreement``), imported when the command runs: importing this module for
``pericurate --help`` stays light."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from curation.audit.audit import DEFAULT_PERMUTATIONS, VISIT_FEATURES, WORK_FOLDER
from curation.cli.options import (
    DEFAULT_BUILD,
    BuildDir,
    LookalikeThreshold,
    SourceLock,
    Workers,
)
from curation.cli.up_to_date import Force, skip_when_unchanged
from curation.core.build_lock import check_writable, holding_build_folder, holds_build_folder
from curation.core.vocabulary import (
    EXACT_UP_TO,
    LOOKALIKE_DISTANCE,
    Decode,
    ExecutorName,
    VisitSearch,
)
from curation.push.hub import PROJECT_ROOT
from curation.source.source import lock_path


@holds_build_folder("audit", "target", builds_only=True, writes=False)
def audit_command(
    target: Annotated[
        str, typer.Argument(help="Build folder, folder of parquet files, or OWNER/NAME@REVISION.")
    ],
    image_column: Annotated[str, typer.Option(help="Column holding the image.")] = "image",
    split_column: Annotated[
        str | None, typer.Option(help="Column naming the split (default: from file names).")
    ] = None,
    label_column: Annotated[
        str | None, typer.Option(help="Label column (default: 'lesions' if present).")
    ] = None,
    cluster_column: Annotated[
        str | None, typer.Option(help="Look-alike cluster ids (default: 'cluster_id').")
    ] = None,
    group_column: Annotated[
        str | None, typer.Option(help="Groups that must stay in one split, e.g. patients.")
    ] = None,
    id_column: Annotated[
        str | None, typer.Option(help="Film id column (default: 'film_id' if present).")
    ] = None,
    referral_column: Annotated[
        str | None, typer.Option(help="Referral struct or text (default: 'referral').")
    ] = None,
    threshold: LookalikeThreshold = LOOKALIKE_DISTANCE,
    method: Annotated[
        list[str] | None, typer.Option(help="Also flag pairs by ahash, phash or dhash.")
    ] = None,
    decode: Annotated[Decode, typer.Option(help="Average hash decoding.")] = Decode.draft,
    out: Annotated[
        Path | None,
        typer.Option(
            help="Folder for report.json, report.html, nearest.png [default: the audit folder "
            "of the target's build, else build/audit]; it holds the workers' work folder while "
            "the audit runs, so with --executor ray every node must see it at the same path.",
            show_default=False,
            file_okay=False,
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the permutation tests.")] = 0,
    permutations: Annotated[
        int, typer.Option(help="Permutations per association test.")
    ] = DEFAULT_PERMUTATIONS,
    strict_patients: Annotated[
        bool,
        typer.Option(help="Exit 1 also when visits of one patient sit in different splits."),
    ] = False,
    executor: Annotated[
        ExecutorName,
        typer.Option(help="Where per-file work runs: this machine, or a Ray cluster."),
    ] = ExecutorName.local,
    workers: Workers = 0,
    visit_search: Annotated[
        VisitSearch,
        typer.Option(
            help="How the visit check searches each film's nearest films: lists (from 4,096 "
            "films on, one list in 32: the cost a film stays flat, but look-alikes whose "
            "features share little can be passed over as the films grow), exact (every "
            "film against every film: the cost grows with the square of the films), or auto "
            f"(exact up to {EXACT_UP_TO:,} films, the largest audit measured with it; lists "
            "above)."
        ),
    ] = VisitSearch.auto,
) -> None:
    """Audit published splits for look-alike leakage and referral hints (exit 1 if found;
    cross-split visits of one patient are listed first, and give exit 1 with
    --strict-patients). TARGET is a build folder, a folder of parquet files, or a Hub dataset
    as OWNER/NAME@REVISION."""
    from curation.audit.audit import run_audit
    from curation.audit.report import print_summary, write_report
    from curation.chain.executors import executor_for
    from curation.core.build_origin import audit_folder
    from curation.core.progress import progress_bars
    from curation.leaks.target import AuditError, Columns

    console = Console(stderr=True)
    out = out or audit_folder(target, DEFAULT_BUILD)
    check_writable(out)  # before the hashing
    columns = Columns(
        image_column,
        split_column,
        label_column,
        cluster_column,
        group_column,
        id_column,
        referral_column,
    )
    made = not out.exists()  # removed again when the audit fails before it kept any work
    try:
        if permutations < 1:
            raise AuditError("--permutations must be at least 1.")
        out.mkdir(parents=True, exist_ok=True)
        with holding_build_folder(out, "audit", kind="report folder"):  # one audit at a time
            with (
                executor_for(executor, workers).mapping("audit") as map,
                progress_bars(console) as track,
            ):
                if (out / WORK_FOLDER).is_dir():
                    console.print(
                        f"{out}: resuming an audit that stopped midway; what it stored in "
                        f"{WORK_FOLDER} (hashes, checks by hash, films' features, pairs searched, "
                        "verified and aligned) is read again, not computed again.",
                        markup=False,
                        highlight=False,
                        soft_wrap=True,
                    )
                audit = run_audit(
                    target,
                    columns,
                    threshold,
                    tuple(method or ()),
                    permutations,
                    seed,
                    decode,
                    track,
                    map=map,
                    work_below=out,  # where the report goes: a cluster's nodes must see it
                    visit_search=visit_search,
                )
            write_report(audit, out)
    except AuditError as error:
        if made and not (out / WORK_FOLDER / VISIT_FEATURES).exists():
            shutil.rmtree(out, ignore_errors=True)
        console.print(str(error), style="red", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None
    print_summary(audit, out, console)
    raise typer.Exit(1 if audit.findings or (strict_patients and audit.patient_visits) else 0)


@holds_build_folder("card")
@skip_when_unchanged("card")
def card_command(
    build: BuildDir = DEFAULT_BUILD,
    revision: Annotated[
        str | None, typer.Option(help="Pinned dataset commit to state in the card.")
    ] = None,
    force: Force = False,
) -> None:
    """Write the dataset card, LICENSE and NOTICE into BUILD/dataset from the build's figures."""
    from curation.publish.card import write_card

    card = write_card(build, revision)
    Console(stderr=True).print(f"wrote {card}", markup=False, highlight=False, soft_wrap=True)


@skip_when_unchanged("agreement")
def agreement_command(
    build: BuildDir = DEFAULT_BUILD,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
    force: Force = False,
) -> None:
    """Score the double-annotated films against each other with the environment's scorer."""
    from curation.core.build_origin import is_synthetic
    from curation.publish.agreement import AGREEMENT_FILE, agreement, describe

    result = agreement(build / AGREEMENT_FILE, seed)
    synthetic = is_synthetic(build)
    sample = " (synthetic sample: generated films, not the real archive)" if synthetic else ""
    Console().print(f"inter-annotator agreement: {describe(result)}{sample}", soft_wrap=True)


@holds_build_folder("push")
def push_command(
    repo: Annotated[str, typer.Option("--repo", help="Hub dataset repo, OWNER/NAME.")],
    build: BuildDir = DEFAULT_BUILD,
    endpoint: Annotated[
        str | None, typer.Option(help="Hub endpoint (default HF_ENDPOINT or the Hub).")
    ] = None,
    lock: SourceLock = None,
    tag: Annotated[
        str | None, typer.Option(help="Tag for the version (default: by content).")
    ] = None,
    dry_run: Annotated[bool, typer.Option(help="Print the plan; touch nothing.")] = False,
    allow_synthetic: Annotated[
        bool, typer.Option(help="Push a build made from the synthetic sample (not real data).")
    ] = False,
    env_push: Annotated[bool, typer.Option(help="Publish the environment with prime.")] = False,
    build_env: Annotated[bool, typer.Option(help="Build the environment's wheel/sdist.")] = True,
    repo_root: Annotated[Path, typer.Option(help="Project root holding the pins.")] = PROJECT_ROOT,
) -> None:
    """Publish the build as one pinned Hub commit and pin the environment to it."""
    from curation.push.hub import push_build

    push_build(
        build,
        repo,
        lock_path(build, lock),
        endpoint=endpoint,
        tag=tag,
        dry_run=dry_run,
        allow_synthetic=allow_synthetic,
        env_push=env_push,
        build_env=build_env,
        repo_root=repo_root,
    )
