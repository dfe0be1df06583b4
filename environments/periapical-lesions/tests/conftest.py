"""A small dataset folder in the published schema, for tests that need rows the sample source
does not have (a mismatched card, several lesion-free films)."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Awaitable, Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import verifiers.v1 as vf
from PIL import Image

SCHEMA = pa.schema(
    [
        ("film_id", pa.string()),
        ("image", pa.struct([("bytes", pa.binary()), ("path", pa.string())])),
        ("width", pa.int32()),
        ("height", pa.int32()),
        (
            "lesions",
            pa.list_(pa.struct([("box", pa.list_(pa.float32(), 4)), ("pai", pa.int8())])),
        ),
        (
            "referral",
            pa.struct(
                [
                    ("patient_code", pa.string()),
                    ("age", pa.int16()),
                    ("sex", pa.string()),
                    ("reason", pa.string()),
                    ("text", pa.string()),
                ]
            ),
        ),
        ("cluster_id", pa.string()),
        ("ahash", pa.string()),
    ]
)

FILMS = {
    "00011": [([0.58, 0.39, 0.60, 0.41], 3)],
    "00141": [([0.68, 0.62, 0.72, 0.67], 4), ([0.67, 0.28, 0.72, 0.37], 5)],
    "00205": [],
    "01000": [],
    "016094": [([0.10, 0.50, 0.20, 0.60], 3)],
}


def film_jpeg(seed: int) -> bytes:
    image = Image.new("L", (64, 32), color=40 + 30 * seed)
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=80)
    return buffer.getvalue()


def film_rows() -> list[dict]:
    rows = []
    for seed, (film_id, lesions) in enumerate(FILMS.items()):
        text = f"Patient P{seed:03d}, 4{seed} years, F.\nReason: pain lower left, film {film_id}.\n"
        rows.append(
            {
                "film_id": film_id,
                "image": {"bytes": film_jpeg(seed), "path": f"{film_id}.jpg"},
                "width": 64,
                "height": 32,
                "lesions": [{"box": box, "pai": pai} for box, pai in lesions],
                "referral": {
                    "patient_code": f"P{seed:03d}",
                    "age": 40 + seed,
                    "sex": "F",
                    "reason": "pain lower left",
                    "text": text,
                },
                "cluster_id": film_id,
                "ahash": "0" * 128,
            }
        )
    return rows


def write_dataset(folder: Path, split: str, rows: list[dict], card_count: int | None) -> Path:
    """A dataset folder with one split shard and, when `card_count` is set, a card that
    claims that many rows for the split."""
    (folder / "data").mkdir(parents=True)
    table = pa.Table.from_pylist(rows, schema=SCHEMA)
    pq.write_table(table, folder / "data" / f"{split}-00000-of-00001.parquet")
    if card_count is not None:
        (folder / "README.md").write_text(
            "---\ndataset_info:\n  splits:\n"
            f"  - name: {split}\n    num_examples: {card_count}\n---\n# card\n",
            encoding="utf-8",
        )
    return folder


@pytest.fixture(scope="session")
def synthetic_dataset_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rows = film_rows()
    return write_dataset(tmp_path_factory.mktemp("synthetic"), "test", rows, len(rows))


@pytest.fixture
def synthetic_rows() -> list[dict]:
    return film_rows()


@pytest.fixture
def dataset_writer() -> Callable[[Path, str, list[dict], int | None], Path]:
    """`write_dataset(folder, split, rows, card_count)` for tests that need odd folders."""
    return write_dataset


class ScriptedHarness(vf.Harness[vf.HarnessConfig]):
    """The agent side without a model: runs a fixed script against the runtime, the way an
    agent's tool calls would (writing files, running commands in its working directory).
    Each step is an async callable taking the runtime; what it returns is kept in order."""

    NEEDS_CONTAINER = False

    def __init__(self, config: vf.HarnessConfig, steps: list[Step]) -> None:
        super().__init__(config)
        self.steps = steps
        self.observed: list[object] = []

    async def launch(self, ctx, trace, runtime, endpoint, secret, mcp_urls, data):
        for step in self.steps:
            self.observed.append(await step(runtime))
        return vf.ProgramResult(exit_code=0, stdout="", stderr="")


Step = Callable[[vf.Runtime], Awaitable[object]]
ROLLOUT_WATCHDOG_SECONDS = 300


def write_file(name: str, content: bytes | str) -> Step:
    data = content.encode() if isinstance(content, str) else content

    async def step(runtime: vf.Runtime) -> None:
        await runtime.write(name, data)

    return step


def run_command(*argv: str) -> Step:
    async def step(runtime: vf.Runtime) -> vf.ProgramResult:
        return await runtime.run(list(argv), {})

    return step


def read_file(name: str) -> Step:
    async def step(runtime: vf.Runtime) -> bytes:
        return await runtime.read(name)

    return step


async def _rollouts(
    runs: list[tuple[vf.Task, list[Step]]],
) -> list[tuple[vf.Trace, list[object]]]:
    agent = vf.Agent(vf.AgentConfig(model="scripted", runtime=vf.SubprocessConfig()))
    results = []
    async with agent:
        for task, steps in runs:
            harness = ScriptedHarness(agent.config.harness, steps)
            agent.harness = harness
            # A watchdog, not a timing check: a hanging scorer fails the test instead of
            # stalling the suite.
            trace = await asyncio.wait_for(agent.run(task), ROLLOUT_WATCHDOG_SECONDS)
            results.append((trace, harness.observed))
    return results


def rollouts(runs: list[tuple[vf.Task, list[Step]]]) -> list[tuple[vf.Trace, list[object]]]:
    """Real verifiers rollouts, one per (task, script), on the local subprocess runtime:
    task setup, the scripted agent, finalize and scoring. Returns each trace with what its
    steps returned."""
    results = asyncio.run(_rollouts(runs))
    for trace, _ in results:
        assert trace.ok, trace.errors
    return results


def rollout(task: vf.Task, steps: list[Step]) -> tuple[vf.Trace, list[object]]:
    return rollouts([(task, steps)])[0]


class Agent:
    """The scripted agent's vocabulary, handed to tests as the `agent` fixture."""

    write_file = staticmethod(write_file)
    run_command = staticmethod(run_command)
    read_file = staticmethod(read_file)
    rollout = staticmethod(rollout)
    rollouts = staticmethod(rollouts)


@pytest.fixture
def agent() -> type[Agent]:
    return Agent
