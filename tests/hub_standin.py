"""A Hub stand-in on 127.0.0.1 for end-to-end tests with the real huggingface_hub client.

It serves only what ``create_repo``, ``repo_info``, ``list_repo_tree``, ``create_commit``
(preupload and regular uploads), ``create_tag``, ``list_repo_refs`` and ``snapshot_download``
ask for, keeps commits in memory and names each commit by the sha1 of its parent, message and
tree, so equal histories give equal shas. Writes need the write token; the read-only token is
refused with 403, as the Hub refuses a token without write access.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import pytest

WRITE_TOKEN = "hf_standinWriteTokenDoNotPrint0123456789"
READ_TOKEN = "hf_standinReadOnlyTokenDoNotPrint987654"
GITATTRIBUTES = b"*.parquet filter=lfs diff=lfs merge=lfs -text\n"


def blob_oid(content: bytes) -> str:
    """The git blob sha1, as the Hub reports for regular files."""
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


@dataclass
class Commit:
    sha: str
    parent: str | None
    message: str
    files: dict[str, bytes]


@dataclass
class Repo:
    repo_id: str
    commits: dict[str, Commit] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)

    def commit(self, parent: str | None, message: str, files: dict[str, bytes]) -> Commit:
        tree = "".join(f"{p}\0{blob_oid(c)}\n" for p, c in sorted(files.items()))
        sha = hashlib.sha1(f"{parent}\n{message}\n{tree}".encode()).hexdigest()
        made = Commit(sha, parent, message, dict(files))
        self.commits[sha] = made
        return made

    def resolve(self, revision: str) -> Commit | None:
        sha = self.branches.get(revision) or self.tags.get(revision) or revision
        return self.commits.get(sha)


@dataclass
class HubStandIn:
    url: str
    repos: dict[str, Repo]
    requests: list[str]

    def commit_count(self, repo_id: str) -> int:
        return len(self.repos[repo_id].commits)


class _Handler(BaseHTTPRequestHandler):
    hub: HubStandIn

    def log_message(self, format: str, *args: object) -> None:  # keep test output clean
        return

    def _send(self, status: int, body: object = None, headers: dict[str, str] | None = None):
        data = (
            b"" if body is None else body if isinstance(body, bytes) else json.dumps(body).encode()
        )
        self.send_response(status)
        if not isinstance(body, bytes):
            self.send_header("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _error(self, status: int, message: str, code: str | None = None) -> None:
        self._send(status, {"error": message}, {"X-Error-Code": code} if code else None)

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _may_write(self) -> bool:
        auth = self.headers.get("Authorization", "")
        if auth == f"Bearer {WRITE_TOKEN}":
            return True
        if auth == f"Bearer {READ_TOKEN}":
            self._error(403, "You don't have the rights to write to this repository")
        else:
            self._error(401, "Invalid credentials in Authorization header")
        return False

    def _repo(self, repo_id: str) -> Repo | None:
        repo = self.hub.repos.get(repo_id)
        if repo is None:
            self._error(404, "Repository not found", "RepoNotFound")
        return repo

    def _revision(self, repo: Repo, revision: str) -> Commit | None:
        commit = repo.resolve(unquote(revision))
        if commit is None:
            self._error(404, f"Invalid rev id: {revision}", "RevisionNotFound")
        return commit

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        path, query = parts.path, parse_qs(parts.query)
        self.hub.requests.append(f"{self.command} {path}")
        if m := re.fullmatch(r"/api/datasets/([^/]+/[^/]+)(?:/revision/([^/]+))?", path):
            if (repo := self._repo(m[1])) and (commit := self._revision(repo, m[2] or "main")):
                siblings = [{"rfilename": p} for p in sorted(commit.files)]
                self._send(200, {"id": repo.repo_id, "sha": commit.sha, "siblings": siblings})
        elif m := re.fullmatch(r"/api/datasets/([^/]+/[^/]+)/tree/([^/]+)(/.*)?", path):
            if (repo := self._repo(m[1])) and (commit := self._revision(repo, m[2])):
                prefix = unquote(m[3] or "").strip("/")
                recursive = query.get("recursive", ["false"])[0].lower() in ("1", "true")
                entries = [
                    {"type": "file", "oid": blob_oid(c), "size": len(c), "path": p}
                    for p, c in sorted(commit.files.items())
                    if p.startswith(f"{prefix}/" if prefix else "")
                    and (recursive or "/" not in p[len(prefix) :].strip("/"))
                ]
                self._send(200, entries)
        elif m := re.fullmatch(r"/api/datasets/([^/]+/[^/]+)/refs", path):
            if repo := self._repo(m[1]):

                def refs(names: dict[str, str], kind: str) -> list[dict[str, str]]:
                    return [
                        {"name": n, "ref": f"refs/{kind}/{n}", "targetCommit": s}
                        for n, s in sorted(names.items())
                    ]

                body = {
                    "branches": refs(repo.branches, "heads"),
                    "tags": refs(repo.tags, "tags"),
                    "converts": [],
                    "pullRequests": [],
                }
                self._send(200, body)
        elif m := re.fullmatch(r"/datasets/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path):
            if (repo := self._repo(m[1])) and (commit := self._revision(repo, m[2])):
                content = commit.files.get(unquote(m[3]))
                if content is None:
                    self._error(404, "Entry not found", "EntryNotFound")
                    return
                oid = blob_oid(content)
                headers = {"ETag": f'"{oid}"', "X-Repo-Commit": commit.sha}
                self._send(200, content, headers)
        else:
            self._error(404, f"the stand-in does not serve GET {path}")

    def do_POST(self) -> None:
        path = urlsplit(self.path).path
        self.hub.requests.append(f"POST {path}")
        body = self._body()
        if path == "/api/validate-yaml":
            self._send(200, {"errors": [], "warnings": []})
            return
        if not self._may_write():
            return
        if path == "/api/repos/create":
            payload = json.loads(body)
            repo_id = "/".join(filter(None, (payload.get("organization"), payload["name"])))
            if payload.get("type") != "dataset":
                self._error(400, "the stand-in only holds dataset repos")
            elif repo_id in self.hub.repos:
                url = f"{self.hub.url}/datasets/{repo_id}"
                self._send(409, {"error": "You already created this dataset repo", "url": url})
            else:
                repo = Repo(repo_id)
                first = repo.commit(None, "initial commit", {".gitattributes": GITATTRIBUTES})
                repo.branches["main"] = first.sha
                self.hub.repos[repo_id] = repo
                self._send(200, {"url": f"{self.hub.url}/datasets/{repo_id}"})
        elif m := re.fullmatch(r"/api/datasets/([^/]+/[^/]+)/preupload/([^/]+)", path):
            if (repo := self._repo(m[1])) and (commit := self._revision(repo, m[2])):
                files = [
                    {
                        "path": f["path"],
                        "uploadMode": "regular",
                        "shouldIgnore": False,
                        "oid": blob_oid(commit.files[f["path"]])
                        if f["path"] in commit.files
                        else None,
                    }
                    for f in json.loads(body)["files"]
                ]
                self._send(200, {"files": files})
        elif m := re.fullmatch(r"/api/datasets/([^/]+/[^/]+)/commit/([^/]+)", path):
            if repo := self._repo(m[1]):
                self._commit(repo, unquote(m[2]), body)
        elif m := re.fullmatch(r"/api/datasets/([^/]+/[^/]+)/tag/([^/]+)", path):
            if (repo := self._repo(m[1])) and (commit := self._revision(repo, m[2])):
                tag = json.loads(body)["tag"]
                if tag in repo.tags:
                    self._error(409, f"Tag {tag} already exists")
                else:
                    repo.tags[tag] = commit.sha
                    self._send(200, {})
        else:
            self._error(404, f"the stand-in does not serve POST {path}")

    def _commit(self, repo: Repo, branch: str, body: bytes) -> None:
        lines = [json.loads(line) for line in body.splitlines() if line.strip()]
        header = next(line["value"] for line in lines if line["key"] == "header")
        head = repo.branches.get(branch)
        if head is None:
            self._error(404, f"Invalid rev id: {branch}", "RevisionNotFound")
            return
        if header.get("parentCommit") not in (None, head):
            self._error(412, "A commit has happened since. Please refresh and try again.")
            return
        files = dict(repo.commits[head].files)
        for line in lines:
            value = line["value"]
            if line["key"] == "file":
                files[value["path"]] = base64.b64decode(value["content"])
            elif line["key"] == "deletedFile":
                files.pop(value["path"], None)
            elif line["key"] != "header":
                self._error(400, f"the stand-in does not accept {line['key']} entries")
                return
        made = repo.commit(head, header["summary"], files)
        repo.branches[branch] = made.sha
        url = f"{self.hub.url}/datasets/{repo.repo_id}/commit/{made.sha}"
        self._send(200, {"commitUrl": url, "commitOid": made.sha, "success": True})


@pytest.fixture
def hub_standin() -> Iterator[HubStandIn]:
    """A fresh, empty stand-in Hub for one test."""
    handler = type("Handler", (_Handler,), {})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    hub = HubStandIn(f"http://127.0.0.1:{server.server_address[1]}", {}, [])
    handler.hub = hub
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield hub
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def pushable_copy(sample_build: Path, folder: Path) -> tuple[Path, Path]:
    """A private copy of a sample build (without its work and cache folders) in ``folder``,
    and a source lock that matches it: what ``pericurate push`` needs."""
    build = folder / "build"
    shutil.copytree(sample_build, build, ignore=shutil.ignore_patterns("work", "cache"))
    source = json.loads((build / "curation.json").read_text())["source"]
    lock = folder / "source.lock.json"
    entry = {"sha256": source["archive_sha256"], "size": source["archive_size"]}
    lock.write_text(json.dumps({"sources": {Path(source["origin"]).name: entry}}))
    return build, lock
