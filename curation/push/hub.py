"""``pericurate push``: publish a build as one Hub commit that never moves, and pin the
periapical-lesions environment to it.

Before anything is sent (``--dry-run`` too), the build's files are verified together
(``curation.publish.build_check``): each shard holds exactly the films the manifest keeps in its
split, each image with the published sha256 the manifest records, and ``clusters.parquet``
and ``curation.json`` agree with them; a build made from the synthetic sample is refused
unless ``--allow-synthetic``. So is everything the push does after its upload: the pin files
must hold one revision line each, the environment package is built once into a folder thrown
away (by its backend in this interpreter, never a tool looked up on PATH), ``prime`` must be
installed for ``--env-push``, and a real push needs a token. One ``create_commit`` guarded
by ``parent_commit`` uploads the files (it drops unchanged files itself and makes no empty
commit, so the head is then the revision). The revision is tagged, written into the
environment's ``pinned.py``, its eval config and the local card; the environment's wheel and
sdist are built, and ``--env-push`` publishes the environment with ``prime env push``
(``pericurate[prime]``).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from curation.core.atomic import write_bytes
from curation.core.errors import PericurateError, SourceError
from curation.publish.schema import SPLITS, shard_name
from curation.publish.summary import SourceFacts, Summary, SummaryError
from curation.source.download import read_lock

if TYPE_CHECKING:
    from huggingface_hub import CommitOperation, HfApi
    from huggingface_hub.errors import HfHubHTTPError

PROJECT_ROOT = Path(__file__).resolve().parents[2]
PINNED_FILE = Path("environments/periapical-lesions/periapical_lesions/pinned.py")
EVAL_CONFIG = Path("configs/periapical-lesions/eval.toml")
ENV_PACKAGE = Path("environments/periapical-lesions")
ENV_DIST = Path("build/env-dist")
KEEP_REMOTE = (".gitattributes",)
AUDIT_FILES = ("clusters.parquet", "manifest.parquet", "agreement.parquet")


class PushError(PericurateError):
    """A problem a user will meet, told in one sentence."""


@dataclass(frozen=True)
class Upload:
    """One file to upload: where it goes in the repository and its bytes."""

    path_in_repo: str
    content: bytes

    @property
    def blob_id(self) -> str:
        """The git blob sha1, which the Hub reports for every file of a tree."""
        header = b"blob %d\0" % len(self.content)
        return hashlib.sha1(header + self.content).hexdigest()


def check_fresh(build: Path, lock: Path) -> SourceFacts:
    """The build's source, refused when the build is missing or was made from an archive the
    lock no longer records."""
    summary_path = build / "curation.json"
    if not summary_path.is_file():
        raise PushError(f"{summary_path}: the build is missing; run `pericurate build` first.")
    try:
        source = Summary.load(summary_path).source
    except SummaryError as error:
        raise PushError(str(error)) from None
    try:
        entries = read_lock(lock)
    except SourceError as error:
        raise PushError(str(error)) from None
    if not lock.is_file():
        raise PushError(f"{lock}: no source lock; pass --lock with the lock the build used.")
    origin = source.origin
    entry = entries.get(origin) or entries.get(Path(origin).name)
    if entry is None or entry.get("sha256") != source.archive_sha256:
        raise PushError(
            f"{build} is stale: it was built from an archive with sha256 "
            f"{source.archive_sha256} but {lock} records "
            f"{entry.get('sha256') if entry else 'no entry'} for {origin}; rebuild it."
        )
    return source


def check_files(build: Path) -> None:
    """Refuse a build whose audit files are missing or unreadable, or whose shards, manifest,
    clusters and summary disagree (``curation.publish.build_check.verify_build``)."""
    from curation.publish.build_check import BuildMismatch, read_rows, verify_build  # pyarrow

    try:
        for name in AUDIT_FILES:
            for _ in read_rows(build / name, None):
                pass
        verify_build(build)
    except BuildMismatch as error:
        raise PushError(str(error)) from None


def uploads(build: Path) -> list[Upload]:
    """What a push publishes: shards, card (rendered fresh, without a pin), licence files,
    the summary and the audit files."""
    from cards.licenses import license_texts
    from curation.publish.card import render_card

    dataset = build / "dataset"
    source = Summary.load(build / "curation.json").source
    files = [
        Upload(f"data/{shard_name(s)}", (dataset / "data" / shard_name(s)).read_bytes())
        for s in SPLITS
    ]
    files.append(Upload("README.md", render_card(build).encode("utf-8")))
    files += [
        Upload(name, text.encode("utf-8"))
        for name, text in license_texts(source.citation, source.doi).items()
    ]
    files.append(Upload("curation.json", (build / "curation.json").read_bytes()))
    files += [Upload(f"audit/{n}", (build / n).read_bytes()) for n in AUDIT_FILES]
    return sorted(files, key=lambda u: u.path_in_repo)


def tree_tag(files: list[Upload]) -> str:
    """A tag named after the content, so equal builds get equal tags."""
    digest = hashlib.sha256("".join(f"{u.path_in_repo}\0{u.blob_id}\n" for u in files).encode())
    return f"data-{digest.hexdigest()[:12]}"


def _http_error(error: HfHubHTTPError, repo: str) -> PushError:
    status = error.response.status_code if error.response is not None else None
    if status == 401:
        return PushError(f"the Hub refused the token for {repo}; log in again or set HF_TOKEN.")
    if status == 403:
        return PushError(f"the token has no write access to {repo}.")
    if status in (409, 412):
        return PushError(f"the main branch of {repo} moved while pushing; run the push again.")
    return PushError(f"the Hub answered HTTP {status} for {repo}.")


def publish(api: HfApi, repo: str, files: list[Upload], tag: str) -> tuple[str, bool]:
    """The commit holding exactly ``files`` on main and whether this call made it."""
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete

    api.create_repo(repo, repo_type="dataset", exist_ok=True)
    parent = api.repo_info(repo, repo_type="dataset", revision="main").sha
    remote = {
        f.path
        for f in api.list_repo_tree(repo, repo_type="dataset", revision=parent, recursive=True)
        if hasattr(f, "blob_id")
    }
    stale = sorted(remote - {u.path_in_repo for u in files} - set(KEEP_REMOTE))
    operations: list[CommitOperation] = [
        CommitOperationAdd(u.path_in_repo, u.content) for u in files
    ]
    operations += [CommitOperationDelete(p) for p in stale]
    info = api.create_commit(  # drops unchanged files; nothing changed: no commit, the head
        repo,
        operations,
        commit_message=f"Publish curated dataset ({tag})",
        repo_type="dataset",
        parent_commit=parent,
    )
    head, made = info.oid, info.oid != parent
    tags = {t.name: t.target_commit for t in api.list_repo_refs(repo, repo_type="dataset").tags}
    if tag in tags and tags[tag] != head:
        raise PushError(f"tag {tag} already names commit {tags[tag]} of {repo}; choose another.")
    if tag not in tags:
        api.create_tag(repo, tag=tag, revision=head, repo_type="dataset")
    return head, made


def _pin_rules(repo_root: Path, sha: str) -> tuple[tuple[Path, str, str], ...]:
    """Each pin file, the pattern of its one revision line and that line naming ``sha``."""
    return (
        (
            repo_root / PINNED_FILE,
            r"^REVISION: str \| None = .*$",
            f'REVISION: str | None = "{sha}"',
        ),
        (repo_root / EVAL_CONFIG, r"^revision = .*$", f'revision = "{sha}"'),
    )


def pin_revision(repo_root: Path, sha: str) -> list[Path]:
    """Rewrite the one revision line of pinned.py and of the eval config."""
    check_pins(repo_root)
    rules = _pin_rules(repo_root, sha)
    for path, pattern, line in rules:
        text = re.sub(pattern, line, path.read_text(encoding="utf-8"), flags=re.MULTILINE)
        write_bytes(path, text.encode("utf-8"))
    return [path for path, _, _ in rules]


def build_environment(repo_root: Path, out: Path) -> list[Path]:
    """The environment's sdist and wheel in ``out``, built by its own backend (hatchling) run
    by this interpreter: no build tool on PATH and no network needed."""
    from build import BuildBackendException, BuildException, ProjectBuilder
    from pyproject_hooks import quiet_subprocess_runner

    package = repo_root / ENV_PACKAGE
    if not (package / "pyproject.toml").is_file():
        raise PushError(
            f"{package}: no pyproject.toml, so the environment package cannot be built; pass "
            "--repo-root with the project root, or --no-build-env."
        )
    try:
        builder = ProjectBuilder(
            package, python_executable=sys.executable, runner=quiet_subprocess_runner
        )
        missing = builder.check_dependencies("sdist") | builder.check_dependencies("wheel")
        if missing:
            needed = ", ".join(sorted(chain[0] for chain in missing))
            raise PushError(
                f"{package} cannot be built: its build backend needs {needed}, which this "
                "Python lacks; reinstall pericurate."
            )
        return [Path(builder.build(kind, out)) for kind in ("sdist", "wheel")]
    except BuildBackendException as error:
        said = _last_line(getattr(error.exception, "output", None)) or str(error)
        raise PushError(f"building the environment {package} failed: {said}") from None
    except BuildException as error:
        raise PushError(f"building the environment {package} failed: {error}") from None


def _last_line(output: bytes | str | None) -> str:
    """The last line a failed backend printed: its error."""
    text = output.decode(errors="replace") if isinstance(output, bytes) else output or ""
    return next((line.strip() for line in reversed(text.splitlines()) if line.strip()), "")


def check_environment_builds(repo_root: Path) -> None:
    """Build the environment into a folder thrown away after: a push that could not build it
    after publishing is refused before its first upload."""
    with tempfile.TemporaryDirectory(prefix="pericurate-env-") as trial:
        build_environment(repo_root, Path(trial))


def publish_environment(repo_root: Path) -> Path:
    """The pinned environment's sdist and wheel, moved into ``ENV_DIST`` only once both are
    built."""
    out = repo_root / ENV_DIST
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out, prefix=".building-") as fresh:
        for built in build_environment(repo_root, Path(fresh)):
            os.replace(built, out / built.name)
    return out


def check_pins(repo_root: Path) -> None:
    """Refuse, before anything is published, pin files that ``pin_revision`` could not
    rewrite."""
    for path, pattern, _ in _pin_rules(repo_root, "0" * 40):
        if not path.is_file():
            raise PushError(f"{path}: not found; pass --repo-root with the project root.")
        n = len(re.findall(pattern, path.read_text(encoding="utf-8"), flags=re.MULTILINE))
        if n != 1:
            raise PushError(f"{path}: expected one revision line to rewrite, found {n}.")


def prime_cli() -> str:
    """The ``prime`` executable (on PATH, else beside this interpreter, where
    ``pericurate[prime]`` installs it), refused up front when absent."""
    prime = shutil.which("prime") or shutil.which("prime", path=sysconfig.get_path("scripts"))
    if prime is None:
        raise PushError(
            "--env-push needs the prime CLI, which is not installed: install "
            "pericurate[prime] (or `uv tool install prime`) and log in with `prime login`."
        )
    return prime


def push_environment(prime: str, repo_root: Path, console: Console) -> None:
    """``prime env push`` of the environment package (it builds the wheel and uploads it to the
    Environments Hub as the logged-in user; PRIME_API_KEY works too)."""
    env_dir = repo_root / ENV_PACKAGE
    result = subprocess.run(
        [prime, "env", "push", "--path", str(env_dir), "--plain"],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        lines = (result.stdout + result.stderr).splitlines() or ["no output"]
        said = next((x for x in lines if re.search(r"error|fail", x, re.I)), lines[-1]).strip()
        raise PushError(f"prime env push failed for {env_dir} (exit {result.returncode}: {said}).")
    console.print(result.stdout.strip(), markup=False, highlight=False)


def push_build(
    build: Path,
    repo: str,
    lock: Path,
    *,
    endpoint: str | None = None,
    tag: str | None = None,
    dry_run: bool = False,
    allow_synthetic: bool = False,
    env_push: bool = False,
    build_env: bool = True,
    repo_root: Path = PROJECT_ROOT,
) -> None:
    """Publish ``build`` as one pinned Hub commit of ``repo`` and pin the environment to it
    (with ``dry_run``, print the plan and touch nothing); errors are ``PushError``s."""
    console = Console(soft_wrap=True, markup=False, highlight=False)
    if not re.fullmatch(r"[\w.-]+/[\w.-]+", repo):
        raise PushError(f"--repo {repo!r} is not OWNER/NAME.")
    source = check_fresh(build, lock)
    if source.synthetic and not allow_synthetic:
        raise PushError(
            f"{build} was made from the synthetic sample, not real data; pass "
            "--allow-synthetic to push it anyway."
        )
    check_files(build)
    check_pins(repo_root)
    prime = prime_cli() if env_push else None
    if build_env:
        check_environment_builds(repo_root)
    files = uploads(build)
    tag = tag or tree_tag(files)
    target = endpoint or os.environ.get("HF_ENDPOINT") or "https://huggingface.co"
    if dry_run:
        for u in files:
            console.print(f"{u.path_in_repo}\t{len(u.content)} bytes")
        console.print(f"would commit {len(files)} files to dataset {repo} at {target}, tag {tag}")
        console.print(
            f"a real push then rewrites tracked files of this project ({PINNED_FILE}, "
            f"{EVAL_CONFIG}) to pin the revision, writes the card again"
            + (
                f" and builds the environment's wheel and sdist into {ENV_DIST}."
                if build_env
                else "."
            )
        )
        return
    from huggingface_hub import HfApi, get_token
    from huggingface_hub.errors import HfHubHTTPError

    from curation.publish.card import write_card

    token = get_token()
    if not token:
        raise PushError("no Hugging Face token: set HF_TOKEN or run `hf auth login`.")
    api = HfApi(endpoint=target, token=token)
    try:
        sha, made = publish(api, repo, files, tag)
    except HfHubHTTPError as error:
        raise _http_error(error, repo) from None
    except PushError:
        raise
    except Exception as error:  # transport errors; shown by type only, never with locals
        raise PushError(f"could not reach the Hub at {target} ({type(error).__name__}).") from None
    console.print(f"{'pushed' if made else 'unchanged'}: {repo} at {sha} (tag {tag})")
    for path in pin_revision(repo_root, sha):
        console.print(f"pinned {path}")
    write_card(build, sha)
    if build_env:
        console.print(f"built the environment into {publish_environment(repo_root)}")
    if prime is not None:
        push_environment(prime, repo_root, console)
