"""End to end: push a sample build to the Hub stand-in with the real huggingface_hub client,
then load the pinned revision through the environment's own loader."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import zipfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from huggingface_hub import constants
from periapical_lesions.policies import reference
from periapical_lesions.scoring import score
from periapical_lesions.taskset import PeriapicalLesionsConfig, PeriapicalLesionsTaskset
from typer.testing import CliRunner

from curation.cli.app import app
from curation.push.hub import ENV_PACKAGE, EVAL_CONFIG, PINNED_FILE
from tests.hub_standin import READ_TOKEN, WRITE_TOKEN, HubStandIn, hub_standin, pushable_copy

__all__ = ["hub_standin"]
REPO = "curator/periapical-test"
PROJECT = Path(__file__).resolve().parents[2]


@pytest.fixture
def workspace(sample_build: Path, tmp_path: Path, hub_standin: HubStandIn, monkeypatch) -> dict:
    """A private copy of the build, of the two pin files and a lock matching the build;
    the client pointed at the stand-in with the write token and an empty cache."""
    build, lock = pushable_copy(sample_build, tmp_path)
    root = tmp_path / "root"
    for relative in (PINNED_FILE, EVAL_CONFIG):
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(PROJECT / relative, root / relative)
    monkeypatch.setenv("HF_TOKEN", WRITE_TOKEN)
    monkeypatch.setenv("HF_ENDPOINT", hub_standin.url)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "no-token"))
    return {"build": build, "root": root, "lock": lock, "hub": hub_standin}


def push(ws: dict, *extra: str, synthetic: bool = True):
    """``pericurate push`` of the workspace's build (made from the sample: allowed unless
    ``synthetic`` is False)."""
    args = ["push", "--repo", REPO, "--build", str(ws["build"]), "--lock", str(ws["lock"])]
    args += ["--repo-root", str(ws["root"]), *extra]
    args += ["--allow-synthetic"] if synthetic else []
    result = CliRunner().invoke(app, args)
    assert WRITE_TOKEN not in result.output and READ_TOKEN not in result.output
    return result


def pinned(root: Path) -> str:
    text = (root / PINNED_FILE).read_text()
    sha = re.search(r'^REVISION: str \| None = "([0-9a-f]{40})"$', text, re.MULTILINE)[1]
    config = (root / EVAL_CONFIG).read_text()
    assert re.findall(r'^revision = "([0-9a-f]{40})"$', config, re.MULTILINE) == [sha]
    return sha


def test_push_pins_a_revision_the_environment_loads(workspace: dict) -> None:
    result = push(workspace, "--no-build-env")
    assert result.exit_code == 0, result.output
    hub = workspace["hub"]
    sha = pinned(workspace["root"])
    assert hub.repos[REPO].branches["main"] == sha
    assert sha in hub.repos[REPO].tags.values()
    assert f"`{sha}`" in (workspace["build"] / "dataset" / "README.md").read_text()

    config = PeriapicalLesionsConfig(dataset=REPO, revision=sha, split="test")
    tasks = list(PeriapicalLesionsTaskset(config))
    shard = workspace["build"] / "dataset" / "data" / "test-00000-of-00001.parquet"
    assert [t.data.film_id for t in tasks] == pq.read_table(shard).column("film_id").to_pylist()
    rewards = [score(t.data.lesions, reference(t.data.lesions)).reward for t in tasks]
    assert rewards and all(r == 1.0 for r in rewards)
    assert any(f"/resolve/{sha}/data/test-" in r for r in hub.requests)


def test_unchanged_push_makes_no_commit_and_changed_build_moves_the_pin(workspace: dict) -> None:
    hub = workspace["hub"]
    assert push(workspace, "--no-build-env").exit_code == 0
    first, commits = pinned(workspace["root"]), hub.commit_count(REPO)

    again = push(workspace, "--no-build-env")
    assert again.exit_code == 0, again.output
    assert "unchanged" in again.output
    assert pinned(workspace["root"]) == first and hub.commit_count(REPO) == commits

    summary = workspace["build"] / "curation.json"
    data = json.loads(summary.read_text())
    data["parameters"]["assign"]["seed"] = 7
    summary.write_text(json.dumps(data))
    changed = push(workspace, "--no-build-env")
    assert changed.exit_code == 0, changed.output
    second = pinned(workspace["root"])
    assert second != first and hub.commit_count(REPO) == commits + 1
    assert hub.repos[REPO].commits[second].parent == first


def test_moved_branch_is_refused_in_one_sentence(workspace: dict, monkeypatch) -> None:
    from huggingface_hub import HfApi  # the client push uses (imported inside the command)

    real_info = HfApi.repo_info

    def stale_head(self, *args, **kwargs):  # another writer commits after we read the head
        info = real_info(self, *args, **kwargs)
        repo = workspace["hub"].repos[REPO]
        moved = repo.commit(repo.branches["main"], "someone else", {"x.txt": b"x"})
        repo.branches["main"] = moved.sha
        return info

    monkeypatch.setattr(HfApi, "repo_info", stale_head)
    result = push(workspace, "--no-build-env")
    assert result.exit_code == 2
    assert "moved while pushing" in result.output


@pytest.mark.parametrize(
    ("token", "message"),
    [(None, "no Hugging Face token"), (READ_TOKEN, "no write access")],
)
def test_token_problems_are_one_sentence(workspace: dict, monkeypatch, token, message) -> None:
    if token is None:
        monkeypatch.delenv("HF_TOKEN")
    else:
        monkeypatch.setenv("HF_TOKEN", token)
        push(workspace, "--no-build-env")  # creates nothing: the read token may not write
    result = push(workspace, "--no-build-env")
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


def test_missing_and_stale_builds_are_refused(workspace: dict, tmp_path: Path) -> None:
    missing = CliRunner().invoke(
        app, ["push", "--repo", REPO, "--build", str(tmp_path / "nowhere"), "--lock", "x"]
    )
    assert missing.exit_code == 2 and "the build is missing" in missing.output
    lock = json.loads(workspace["lock"].read_text())
    for entry in lock["sources"].values():
        entry["sha256"] = "0" * 64
    workspace["lock"].write_text(json.dumps(lock))
    stale = push(workspace, "--no-build-env")
    assert stale.exit_code == 2 and "is stale" in stale.output
    assert workspace["hub"].repos == {}


def test_dry_run_lists_the_plan_and_touches_nothing(workspace: dict) -> None:
    _copy_environment(workspace["root"])
    before = (workspace["root"] / PINNED_FILE).read_text()
    result = push(workspace, "--dry-run")
    assert result.exit_code == 0, result.output
    assert "data/train-00000-of-00001.parquet" in result.output and "would commit" in result.output
    assert workspace["hub"].repos == {} and workspace["hub"].requests == []
    assert (workspace["root"] / PINNED_FILE).read_text() == before


def _copy_environment(root: Path) -> Path:
    env = root / ENV_PACKAGE
    shutil.copytree(
        PROJECT / ENV_PACKAGE,
        env,
        ignore=shutil.ignore_patterns("tests", "__pycache__", "pinned.py", "dist"),
        dirs_exist_ok=True,
    )
    return env


def _without_uv_on_path(tmp_path: Path, monkeypatch) -> None:
    """PATH holding one empty folder, as on a machine whose uv is the Makefile's private one."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    assert shutil.which("uv") is None


def test_environment_package_is_built_without_uv_on_path(
    workspace: dict, tmp_path: Path, monkeypatch
) -> None:
    root = workspace["root"]
    _copy_environment(root)
    _without_uv_on_path(tmp_path, monkeypatch)
    result = push(workspace)
    assert result.exit_code == 0, result.output
    built = sorted(p.name for p in (root / "build" / "env-dist").iterdir())
    assert any(n.endswith(".whl") for n in built) and any(n.endswith(".tar.gz") for n in built)
    sha = pinned(root)
    (wheel,) = (root / "build" / "env-dist").glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:  # the wheel carries the revision just pushed
        assert sha in archive.read("periapical_lesions/pinned.py").decode()


def _break_the_backend(root: Path) -> None:
    """An environment whose backend stops: its version is not a version."""
    pyproject = _copy_environment(root) / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('version = "0.3.4"', 'version = "x.y"'))


@pytest.mark.parametrize(
    ("prepare", "problem"),
    [
        (lambda root: None, "no pyproject.toml, so the environment package cannot be built"),
        (_break_the_backend, "building the environment"),
    ],
)
def test_a_push_whose_environment_cannot_be_built_uploads_nothing(
    workspace: dict, tmp_path: Path, monkeypatch, prepare, problem
) -> None:
    root = workspace["root"]
    prepare(root)
    _without_uv_on_path(tmp_path, monkeypatch)
    before = (root / PINNED_FILE).read_text()
    result = push(workspace)
    assert result.exit_code == 2, result.output
    (line,) = [line for line in result.output.splitlines() if line.strip()]
    assert problem in line and str(root / ENV_PACKAGE) in line, line
    assert workspace["hub"].repos == {} and workspace["hub"].requests == []
    assert (root / PINNED_FILE).read_text() == before
    assert not (root / "build" / "env-dist").exists()


def test_a_push_whose_pins_cannot_be_rewritten_uploads_nothing(workspace: dict) -> None:
    config = workspace["root"] / EVAL_CONFIG
    config.write_text(config.read_text() + 'revision = "main"\n')
    result = push(workspace, "--no-build-env")
    assert result.exit_code == 2, result.output
    assert "expected one revision line to rewrite, found 2" in result.output
    assert workspace["hub"].repos == {} and workspace["hub"].requests == []


def test_a_build_from_the_synthetic_sample_is_refused_unless_asked(workspace: dict) -> None:
    refused = push(workspace, "--no-build-env", synthetic=False)
    assert refused.exit_code == 2
    assert "synthetic sample" in refused.output and "--allow-synthetic" in refused.output
    assert workspace["hub"].repos == {}


def _shard(ws: dict, split: str = "test") -> Path:
    return ws["build"] / "dataset" / "data" / f"{split}-00000-of-00001.parquet"


def _flip_a_byte_of_the_first_image(shard: Path) -> None:
    image = pq.read_table(shard).column("image")[0].as_py()["bytes"]
    data = bytearray(shard.read_bytes())
    data[data.index(image) + len(image) // 2] ^= 0xFF
    shard.write_bytes(bytes(data))


@pytest.mark.parametrize(
    ("damage", "problem"),
    [
        (lambda p: p.unlink(), "missing"),
        (lambda p: p.write_bytes(p.read_bytes()[:-5000]), "not a readable parquet file"),
        (_flip_a_byte_of_the_first_image, "does not match the manifest"),
    ],
)
def test_a_damaged_or_missing_shard_is_never_published(workspace: dict, damage, problem):
    shard = _shard(workspace)
    damage(shard)
    result = push(workspace, "--no-build-env")
    assert result.exit_code == 2, result.output
    (line,) = [line for line in result.output.splitlines() if line.strip()]
    assert line.startswith(str(shard)) and problem in line
    assert workspace["hub"].repos == {}


def test_a_shard_of_another_build_is_never_published(workspace: dict) -> None:
    shutil.copy(_shard(workspace, "validation"), _shard(workspace, "test"))
    result = push(workspace, "--no-build-env")
    assert result.exit_code == 2 and "does not match the manifest" in result.output
    assert workspace["hub"].repos == {}


def _clusters_of_another_run(build: Path) -> None:
    """The first film moved to another split, as another seed's run would have put it."""
    path = build / "clusters.parquet"
    table = pq.read_table(path)
    rows = table.to_pylist()
    rows[0]["split"] = "test" if rows[0]["split"] != "test" else "train"
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)


def _summary_of_another_run(build: Path) -> None:
    path = build / "curation.json"
    summary = json.loads(path.read_text())
    summary["splits"]["test"]["films"] += 1
    summary["splits"]["train"]["films"] -= 1
    path.write_text(json.dumps(summary))


def _agreement_of_another_run(build: Path) -> None:
    path = build / "agreement.parquet"
    table = pq.read_table(path)
    assert table.num_rows > 1
    pq.write_table(table.slice(1), path)


@pytest.mark.parametrize(
    ("mix", "name"),
    [
        (_clusters_of_another_run, "clusters.parquet"),
        (_summary_of_another_run, "curation.json"),
        (_agreement_of_another_run, "curation.json"),  # its pair count no longer agrees
    ],
)
def test_a_dry_run_refuses_clusters_or_summary_that_disagree_with_the_shards(
    workspace: dict, mix, name
) -> None:
    mix(workspace["build"])
    result = push(workspace, "--dry-run")
    assert result.exit_code == 2, result.output
    (line,) = [line for line in result.output.splitlines() if line.strip()]
    assert line.startswith(str(workspace["build"] / name)), line
    assert workspace["hub"].repos == {} and workspace["hub"].requests == []


def _fake_prime(tmp_path: Path, monkeypatch, exit_code: int) -> Path:
    """A ``prime`` on PATH that records its arguments and working folder, then exits."""
    bin_dir, record = tmp_path / "bin", tmp_path / "prime-call.json"
    bin_dir.mkdir()
    script = bin_dir / "prime"
    script.write_text(
        "#!/usr/bin/env python3\nimport json, os, sys\n"
        f"json.dump({{'argv': sys.argv[1:], 'cwd': os.getcwd()}}, open({str(record)!r}, 'w'))\n"
        "print('Error: not logged in. Run prime login')\n"
        f"sys.exit({exit_code})\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return record


@pytest.mark.parametrize("exit_code", [0, 1])
def test_env_push_runs_prime_env_push_on_the_environment(
    workspace: dict, tmp_path, monkeypatch, exit_code
) -> None:
    record = _fake_prime(tmp_path, monkeypatch, exit_code)
    result = push(workspace, "--no-build-env", "--env-push")
    call = json.loads(record.read_text())
    env_dir = workspace["root"] / ENV_PACKAGE
    assert call["argv"] == ["env", "push", "--path", str(env_dir), "--plain"]
    if exit_code == 0:
        assert result.exit_code == 0, result.output
    else:
        assert result.exit_code == 2
        last = [line for line in result.output.splitlines() if line.strip()][-1]
        assert last.startswith("prime env push failed for") and "not logged in" in last


def test_env_push_without_prime_is_refused_before_anything_is_published(
    workspace: dict, monkeypatch
) -> None:
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
    result = push(workspace, "--no-build-env", "--env-push")
    assert result.exit_code == 2 and "pericurate[prime]" in result.output
    assert workspace["hub"].repos == {}


def test_the_real_prime_cli_publishes_to_the_api_it_is_pointed_at(
    workspace: dict, httpserver, tmp_path, monkeypatch
) -> None:
    """The installed ``prime`` (pericurate[prime]) against a loopback stand-in of its API that
    refuses the key: it builds the package, asks to resolve the environment with the key, and
    its refusal comes back as one sentence."""
    if shutil.which("prime") is None:
        pytest.skip("the prime CLI (pericurate[prime]) is not installed")
    _copy_environment(workspace["root"])
    httpserver.expect_request("/api/v1/environmentshub/resolve", method="POST").respond_with_json(
        {"detail": "stand-in: unauthorized"}, status=401
    )
    monkeypatch.setenv("PRIME_API_BASE_URL", httpserver.url_for("/").rstrip("/"))
    monkeypatch.setenv("PRIME_API_KEY", "stand-in-key")
    (tmp_path / "home").mkdir()  # prime writes its config under HOME, which must exist
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no real prime config is read
    result = push(workspace, "--no-build-env", "--env-push")
    assert result.exit_code == 2, result.output
    (request, _), *_ = httpserver.log
    assert request.headers["Authorization"] == "Bearer stand-in-key"
    assert request.get_json() == {"name": "periapical-lesions"}
    last = [line for line in result.output.splitlines() if line.strip()][-1]
    assert last.startswith("prime env push failed for") and "unauthorized" in last
    assert "stand-in-key" not in result.output
