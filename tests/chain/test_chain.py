"""The chain declared once: runs follow the declaration, the command line is made from it,
and a step is added with one entry and one function."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from curation.chain.chain import (
    CHAIN,
    ChainError,
    Step,
    bound_settings,
    check_chain,
    through,
)
from curation.chain.executors import LocalExecutor
from curation.chain.run import Run
from curation.chain.runner import Settings, curate
from curation.cli.app import app, step_command
from curation.core.parallel import LocalMap
from curation.core.records import SourceRecord, pending_images
from curation.source.source import Source


class _Quiet:
    def total(self, count: int) -> None:
        pass

    def advance(self, count: int) -> None:
        pass


def _run(source: Source, out: Path) -> Run:
    return Run(source, out, Settings(), lambda description, total: _Quiet(), LocalMap(1))


def count_films(run: Run, records: list[SourceRecord]) -> dict[str, object]:
    """A step added by a test: one function, one entry."""
    return {"films": len(pending_images(records))}


def test_a_new_step_is_one_entry_and_one_function(sample_source, tmp_path):
    counting = Step("count", "count the films", count_films, ("records",), ("films",))
    steps = (*through("originals"), counting)
    check_chain(steps)
    products = LocalExecutor().run(steps, _run(sample_source, tmp_path))
    assert products["films"] == len(pending_images(products["records"])) > 0


@dataclasses.dataclass(frozen=True)
class WideConfig:
    """A new step's user setting, declared next to its function."""

    min_width: int = dataclasses.field(default=0, metadata={"help": "Narrowest film counted."})


def count_wide_films(
    run: Run, config: WideConfig, records: list[SourceRecord]
) -> dict[str, object]:
    """A new step with a user setting: its function and its config, nothing else."""
    return {"wide": sum(1 for r in pending_images(records) if r.width >= config.min_width)}


def test_a_new_step_with_a_setting_is_its_function_its_config_and_one_entry(
    sample_source, tmp_path
):
    wide = Step("wide", "count wide films", count_wide_films, ("records",), ("wide",), WideConfig)
    steps = (*through("originals"), wide)
    check_chain(steps)
    counted = {}
    for settings in (Settings(), Settings(WideConfig(10**6))):
        run = dataclasses.replace(_run(sample_source, tmp_path), settings=settings)
        products = LocalExecutor(1).run(steps, run)
        counted[settings.of(WideConfig).min_width] = products["wide"]
    assert counted == {0: len(pending_images(products["records"])), 10**6: 0}  # type: ignore[arg-type]
    # the command line shows its option, curation.json records it, both from the config
    command = step_command(wide, steps)
    option = next(p for p in command.params if p.name == "min_width")
    assert option.opts == ["--min-width"] and option.default == 0
    recorded = bound_settings(Settings(WideConfig(1000)), steps).record()
    assert recorded == {"wide": {"min_width": 1000}}
    # a second setting of the same name is refused: each is one option
    with pytest.raises(ChainError, match="repeats the setting min_width"):
        check_chain([*steps, dataclasses.replace(wide, name="wider")])


def test_every_step_reads_what_an_earlier_step_wrote():
    check_chain(CHAIN)
    hash_step = next(step for step in CHAIN if step.name == "hash")
    with pytest.raises(ChainError, match="'same-picture' reads hashes"):
        check_chain([step for step in CHAIN if step is not hash_step])
    with pytest.raises(ChainError, match="declared twice"):
        check_chain([*CHAIN, CHAIN[0]])


def test_a_step_writing_what_it_did_not_declare_is_refused(sample_source, tmp_path):
    liar = dataclasses.replace(CHAIN[0], writes=("films",))
    with pytest.raises(ChainError, match="wrote records but declares films"):
        LocalExecutor().run([liar], _run(sample_source, tmp_path))


def _burn(seconds: float) -> float:
    started = time.process_time()
    while time.process_time() - started < seconds:
        pass
    return seconds


def burn_in_workers(run: Run) -> dict[str, object]:
    """A step whose CPU time is spent in worker processes, as the hash step's is."""
    return {"burnt": sum(LocalMap(2)(_burn, [0.3, 0.3], chunksize=1))}


def test_a_steps_time_counts_its_worker_processes(sample_source, tmp_path):
    executor = LocalExecutor()
    burner = Step("burn", "burn CPU in two workers", burn_in_workers, (), ("burnt",))
    executor.run([burner], _run(sample_source, tmp_path))
    [timed] = executor.times
    assert timed.step == "burn" and timed.cpu_s >= 0.55 and timed.wall_s > 0


def test_a_run_leaves_only_its_last_steps_records(sample_source, tmp_path):
    outcome = curate(sample_source, tmp_path, Settings(), "originals", executor=LocalExecutor(1))
    written_files = sorted(p.name for p in (tmp_path / "work").iterdir())
    assert written_files == ["02-originals.parquet", "times.json"]
    times = json.loads((tmp_path / "work" / "times.json").read_text())
    assert [row["step"] for row in times["steps"]] == ["index", "originals"]
    assert times["source_images"] == sum(1 for r in outcome.records if r.kind == "image") > 0
    written = pq.read_table(tmp_path / "work" / "02-originals.parquet").column("path")
    assert written.to_pylist() == sorted(r.path for r in outcome.records)
    assert outcome.summary is None and set(outcome.products) == {"records"}
    with pytest.raises(ChainError, match="unknown step 'tidy'"):
        through("tidy")


def _help(*args: str) -> str:
    result = CliRunner().invoke(app, [*args, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return result.output


def test_the_step_commands_are_the_chain_in_order_with_their_own_options():
    listed = _help().split("Commands:")[1]
    rows = [line.split()[0] for line in listed.splitlines() if re.match(r"  \S", line)]
    assert rows[rows.index("index") :] == [
        *(step.name for step in CHAIN),
        *("audit", "card", "agreement", "push"),
    ]
    for step in CHAIN:
        assert " ".join(step.help.split()) in " ".join(_help(step.name).split())
    index, hashing, assign = _help("index"), _help("hash"), _help("assign")
    assert "--workers" in index and "--decode" not in index and "--seed" not in index
    assert "--decode" in hashing and "[draft|full]" in hashing and "--seed" not in hashing
    assert "--seed" in assign and "[local|ray]" in assign


def test_no_help_shows_markup():
    for command in ([], *([step.name] for step in CHAIN), ["download"], ["card"], ["push"]):
        assert "``" not in _help(*command), command


def test_help_imports_nothing_heavy():
    code = (
        "import sys\n"
        "from curation.cli.app import app\n"
        "try:\n    app(['--help'])\nexcept SystemExit:\n    pass\n"
        "heavy = ('numpy', 'pyarrow', 'datasets', 'httpx', 'huggingface_hub', 'PIL')\n"
        "print(sorted(set(heavy) & set(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_an_unknown_choice_is_a_usage_error(tmp_path):
    result = CliRunner().invoke(app, ["hash", "--build", str(tmp_path), "--decode", "half"])
    assert result.exit_code == 2 and "half" in result.output


def test_ray_without_ray_installed_is_one_sentence(sample_source, tmp_path, monkeypatch):
    sample_source.save(tmp_path / "work" / "source.json")
    monkeypatch.setitem(sys.modules, "ray", None)  # what `import ray` meets without the extra
    result = CliRunner().invoke(app, ["index", "--build", str(tmp_path), "--executor", "ray"])
    assert result.exit_code == 2, result.output
    assert result.output.strip().splitlines() == [
        "--executor ray needs Ray, which is not installed: install pericurate[ray]."
    ]
