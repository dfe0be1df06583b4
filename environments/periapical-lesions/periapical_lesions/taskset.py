"""The periapical-lesions taskset: one task per film, scored from the filed report.json."""

from __future__ import annotations

import re
import sys
from importlib.resources import files
from pathlib import Path
from typing import Literal

import verifiers.v1 as vf
from pydantic import field_validator

from periapical_lesions import pinned
from periapical_lesions.data import Film, current_revision, hub_snapshot, read_split
from periapical_lesions.filing import Filing, filed_in_reply, filed_in_workspace
from periapical_lesions.scoring import Score, score_lesions

WORKSPACE_FILES = ("pantomograph.jpg", "referral.txt", "findings-codebook.md", "radreport.py")

PROMPT = """\
Worklist entry: panoramic film {film_id}

The film is pantomograph.jpg and the referral slip is referral.txt, both in your working \
directory. Read the film for periapical lesions and file your report following \
findings-codebook.md, using the clinic's filing tool radreport.py."""


def package_text(name: str) -> str:
    return files("periapical_lesions").joinpath(name).read_text(encoding="utf-8")


class FilmData(vf.TaskData):
    film_id: str
    width: int
    height: int
    lesions: list[dict]
    """The reference findings; never shown to the agent."""
    referral_text: str
    dataset: str | None = None
    """The Hub dataset the film was read from (None for a local build)."""
    dataset_revision: str | None = None
    """The exact dataset commit the film was read at, so every trace says which data it
    scored against, pinned or resolved at load time."""
    dataset_pinned: bool | None = None
    """True when that commit was pinned (the config, --env.taskset.revision or pinned.py),
    False when the run is UNPINNED (the main branch's commit at load time, which can move),
    None for a local build."""


class FilmTaskConfig(vf.TaskConfig):
    report_source: Literal["file", "reply"] = "file"
    """Where the report comes from: `file` reads the final report.json in the workspace;
    `reply` parses the last report in the agent's final reply (chat-reply harnesses)."""


class FilmTask(vf.Task[FilmData, vf.State, FilmTaskConfig]):
    """One film. The JPEG bytes live on the task, not on its traced data, so traces stay
    small; the film id is the task key."""

    def __init__(
        self, data: FilmData, config: FilmTaskConfig | None = None, image: bytes = b""
    ) -> None:
        super().__init__(data, config)
        self.image = image

    @property
    def key(self) -> str:
        return self.data.film_id

    def workspace_files(self) -> dict[str, bytes]:
        """What setup puts in the agent's working directory."""
        return {
            "pantomograph.jpg": self.image,
            "referral.txt": self.data.referral_text.encode("utf-8"),
            "findings-codebook.md": package_text("findings-codebook.md").encode("utf-8"),
            "radreport.py": package_text("radreport.py").encode("utf-8"),
        }

    async def setup(self, trace: vf.Trace, runtime: vf.Runtime) -> None:
        for name, content in self.workspace_files().items():
            await runtime.write(name, content)

    async def filed_report(
        self, trace: vf.Trace, runtime: vf.Runtime
    ) -> tuple[list[dict] | None, int]:
        """The lesions that count (None when nothing does) and how many were dropped for
        failing their own checks. Collected once per rollout
        (see filing.py for how) and kept on the trace with the reason, so the metrics and
        the reward score the same bytes and a reader of the trace sees why a film scored."""
        if "report_status" not in trace.info:
            filing: Filing = (
                await filed_in_reply(trace.last_reply)
                if self.config.report_source == "reply"
                else await filed_in_workspace(runtime)
            )
            trace.info["report_status"] = filing.status
            trace.info["report_lesions"] = filing.lesions
            trace.info["report_dropped"] = filing.dropped
        return trace.info["report_lesions"], trace.info["report_dropped"]

    async def film_score(self, trace: vf.Trace, runtime: vf.Runtime) -> Score:
        lesions, dropped = await self.filed_report(trace, runtime)
        valid = lesions is not None and dropped == 0
        return score_lesions(self.data.lesions, lesions or [], valid=valid, dropped=dropped)

    @vf.metric
    async def findings(self, trace: vf.Trace, runtime: vf.Runtime) -> dict[str, float]:
        return (await self.film_score(trace, runtime)).metrics()

    @vf.reward(weight=1.0)
    async def reward(self, trace: vf.Trace, runtime: vf.Runtime) -> float:
        return (await self.film_score(trace, runtime)).reward


class PeriapicalLesionsConfig(vf.TasksetConfig):
    task: FilmTaskConfig = FilmTaskConfig()
    dataset: str = pinned.DATASET
    """Hub dataset repo id."""
    revision: str | None = pinned.REVISION
    """The dataset commit (40 hex digits) the tasks are read at. None or "" means unpinned:
    the current commit is looked up once at load time, printed and recorded on every task."""
    split: Literal["train", "validation", "test"] = "test"
    data_dir: Path | None = None
    """A local dataset build to read instead of the Hub (offline use)."""

    @field_validator("revision")
    @classmethod
    def _full_sha(cls, revision: str | None) -> str | None:
        if revision == "":
            return None
        if revision is not None and not re.fullmatch(r"[0-9a-f]{40}", revision):
            raise ValueError(f"revision must be a full 40-hex-digit commit sha, got {revision!r}")
        return revision


class PeriapicalLesionsTaskset(vf.Taskset[FilmTask, PeriapicalLesionsConfig]):
    def source(self) -> tuple[Path, str | None, str | None, bool | None]:
        """The dataset folder to read, with the Hub repo, the exact commit it came from and
        whether that commit was pinned (None for a local build)."""
        config = self.config
        if config.data_dir is not None:
            return config.data_dir, None, None, None
        revision, pinned_revision = config.revision, config.revision is not None
        if revision is None:
            revision = current_revision(config.dataset)
            print(
                f"periapical-lesions: UNPINNED dataset: the tasks come from {config.dataset} "
                f"at {revision}, the commit its main branch points to now, which can move; to "
                f"rerun exactly these tasks pass --env.taskset.revision {revision} (or pin it "
                "with `pericurate push`).",
                file=sys.stderr,
                flush=True,
            )
        folder = hub_snapshot(config.dataset, revision, config.split)
        return folder, config.dataset, revision, pinned_revision

    def load(self) -> list[FilmTask]:
        folder, dataset, revision, pinned_revision = self.source()
        films: list[Film] = read_split(folder, self.config.split)
        return [
            FilmTask(
                FilmData(
                    id=film.film_id,
                    name=film.film_id,
                    prompt=PROMPT.format(film_id=film.film_id),
                    film_id=film.film_id,
                    width=film.width,
                    height=film.height,
                    lesions=film.lesions,
                    referral_text=film.referral_text,
                    dataset=dataset,
                    dataset_revision=revision,
                    dataset_pinned=pinned_revision,
                ),
                self.config.task,
                image=film.image,
            )
            for film in films
        ]
