"""``bench.scale.curve`` decides whether the cost per original is flat across corpus sizes. On a
shared host, runs of one size spread wider than the sizes differ, so it must build the sizes in
turn, report each size's median round, read the steal the host took around every build, time
a fixed unit of reference work all through every build and judge the cost in those units, and find
a corpus that is wholly unpacked without its zip (at 64,000 originals the zip takes over an
hour to write again)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from bench.common.measure import Measured
from bench.scale import curve
from curation.core.build_lock import BuildFolderBusy, holding_build_folder


def _times(user: float, steal: float, idle: float) -> SimpleNamespace:
    return SimpleNamespace(
        user=user, nice=0.0, system=0.0, irq=0.0, softirq=0.0, steal=steal, idle=idle, iowait=0.0
    )


class _FakeSpeedometer:
    """A unit of reference work took ``unit_ms`` on average; the samples took ``cpu_s``."""

    def __init__(self, unit_ms: float, cpu_s: float) -> None:
        self.unit_ms, self.cpu_s = unit_ms, cpu_s

    def __enter__(self) -> _FakeSpeedometer:
        return self

    def __exit__(self, *_: object) -> None:
        return None

    def summary(self) -> dict[str, float]:
        return {"unit_ms": self.unit_ms, "cpu_s": self.cpu_s}


def _fake_build(
    monkeypatch: pytest.MonkeyPatch, unit_ms: float = 1.0, sampled_cpu_s: float = 0.0
) -> None:
    """``pericurate download`` does nothing; ``pericurate build`` writes a times file whose
    steps took 2 s of CPU in all; the reference work took ``unit_ms`` a unit."""
    speedometer = _FakeSpeedometer(unit_ms, sampled_cpu_s)
    monkeypatch.setattr(curve, "Speedometer", lambda: speedometer)

    def run(command: list[str]) -> Measured:
        if "build" in command:
            build = Path(command[command.index("--build") + 1])
            (build / "work").mkdir(parents=True)
            steps = [{"step": "index", "wall_s": 1.0, "cpu_s": 0.5}]
            steps.append({"step": "hash", "wall_s": 2.0, "cpu_s": 1.5})
            times = {"steps": steps, "source_images": 9}
            (build / "work" / "times.json").write_text(json.dumps(times))
        return Measured(wall_s=4.0, peak_rss_mib=100.0, stdout="", cpu_s=24.0)

    monkeypatch.setattr(curve, "run_measured", run)


def test_a_build_records_the_machines_cpu_and_the_hosts_steal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_build(monkeypatch)
    # Over the build: 30 s busy, 10 s stolen, 60 s idle, so steal is a tenth of all the time.
    readings = iter([_times(100.0, 5.0, 1000.0), _times(130.0, 15.0, 1060.0)])
    monkeypatch.setattr(curve.psutil, "cpu_times", lambda: next(readings))
    found = curve._cold_build(tmp_path / "corpus", tmp_path / "b", "local", {}, 1000)
    assert found["steal_share"] == 0.1
    assert found["machine_cpu_ms_per_original"] == 30.0  # 30 s over 1,000 originals
    assert found["cpu_ms_per_original"] == 2.0  # the steps' own 2 s
    assert found["ms_per_original"] == 4.0
    assert found["outside_share"] == 0.2  # the build's processes took 24 of the 30 s


def test_a_build_folder_another_run_still_uses_is_not_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bench stopped midway can leave its build running: the next one must not delete the
    folder under it, and its CPU would spoil every figure."""
    _fake_build(monkeypatch)
    build = tmp_path / "b"
    (build / "work").mkdir(parents=True)
    with holding_build_folder(build, "an earlier build"):
        with pytest.raises(BuildFolderBusy):
            curve._cold_build(tmp_path / "corpus", build, "local", {}, 1000)
        assert (build / "work").is_dir()


def test_a_build_is_read_in_units_of_the_reference_work_sampled_through_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The machine was busy 30 s, 3 s of it the samples of the reference work, whose unit
    took 120 ms: the build's 27 ms an original is 0.225 of a unit."""
    _fake_build(monkeypatch, unit_ms=120.0, sampled_cpu_s=3.0)
    readings = iter([_times(100.0, 0.0, 1000.0), _times(130.0, 0.0, 1060.0)])
    monkeypatch.setattr(curve.psutil, "cpu_times", lambda: next(readings))
    found = curve._cold_build(tmp_path / "corpus", tmp_path / "b", "local", {}, 1000)
    assert found["machine_cpu_ms_per_original"] == 27.0
    assert found["reference"]["unit_ms"] == 120.0
    assert found["reference_units_per_original"] == 0.225


def test_sizes_are_built_in_turn_and_each_reports_its_median_round(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    order: list[int] = []
    cost = {4: iter([30.0, 10.0, 20.0]), 16: iter([12.0, 50.0, 11.0])}

    def build(source: Path, build: Path, executor: str, env: dict, originals: int) -> dict:
        order.append(originals)
        spent = next(cost[originals])
        keys = ("machine_cpu_ms_per_original", "cpu_ms_per_original")
        steps = {"index": {"wall_s": spent, "cpu_s": spent}}
        return {**dict.fromkeys(keys, spent), "steal_share": 0.0, "wall_s": spent, "steps": steps}

    monkeypatch.setattr(curve, "source_of", lambda n, corpus_dir: tmp_path / str(n))
    monkeypatch.setattr(curve, "_cold_build", build)
    found = curve.measure([4, 16], tmp_path, ("local",), rounds=3)
    assert order == [4, 16, 4, 16, 4, 16]
    assert found["sizes"]["4"]["local"]["machine_cpu_ms_per_original"] == 20.0
    assert found["sizes"]["16"]["local"]["machine_cpu_ms_per_original"] == 12.0
    rounds = found["sizes"]["16"]["local"]["rounds"]
    assert [r["machine_cpu_ms_per_original"] for r in rounds] == [12.0, 50.0, 11.0]
    assert found["flatness"]["local"]["highest_over_lowest"] == pytest.approx(20 / 12, abs=1e-3)
    assert found["flatness"]["local"]["flat"] is False


def _judged(machine_ms: float, units: float) -> dict:
    keys = ("cpu_ms_per_original", "steal_share", "wall_s")
    run = {**dict.fromkeys(keys, 0.0), "machine_cpu_ms_per_original": machine_ms}
    return {**run, "reference_units_per_original": units, "reference": {"unit_ms": 1.0}}


def test_flatness_is_judged_in_reference_units_with_the_machines_cpu_beside() -> None:
    """The larger size's build cost 30 % more milliseconds while a unit of reference work cost
    30 % more too: the work an original did not grow, so the cost is flat; the milliseconds'
    spread is still reported."""
    rows = {"4000": {"local": _judged(50.0, 0.5)}, "64000": {"local": _judged(65.0, 0.5)}}
    found = curve.flatness(rows)["local"]
    assert found["judged_on"] == "reference_units_per_original"
    assert found["flat"] is True
    assert found["machine_cpu_highest_over_lowest"] == 1.3
    # and the other way: the same milliseconds on a faster machine is more work an original
    rows["64000"]["local"] = _judged(50.0, 0.6)
    assert curve.flatness(rows)["local"]["flat"] is False


def test_the_median_round_is_chosen_in_reference_units() -> None:
    rounds = [_judged(50.0, 0.7), _judged(60.0, 0.5), _judged(70.0, 0.6)]
    chosen = curve.median_round(rounds)
    assert chosen["reference_units_per_original"] == 0.6
    assert [r["reference_units_per_original"] for r in chosen["rounds"]] == [0.7, 0.5, 0.6]


@pytest.mark.parametrize(("larger", "flat"), [(11.5, True), (11.6, False)])
def test_flat_means_the_highest_cost_within_15_percent_of_the_lowest(
    larger: float, flat: bool
) -> None:
    def size(cost: float) -> dict:
        return {"local": {"machine_cpu_ms_per_original": cost}}

    found = curve.flatness({"4000": size(10.0), "64000": size(larger)})
    assert found["local"]["flat"] is flat


def test_a_size_is_identical_on_ray_only_if_every_round_was() -> None:
    def run(cost: float, same: bool) -> dict:
        keys = ("machine_cpu_ms_per_original", "cpu_ms_per_original", "steal_share", "wall_s")
        return {**dict.fromkeys(keys, cost), "outputs_identical": same}

    assert (
        curve.median_round([run(1.0, True), run(2.0, False), run(3.0, True)])["outputs_identical"]
        is False
    )
    assert curve.median_round([run(1.0, True), run(2.0, True)])["outputs_identical"] is True


def test_a_wholly_unpacked_corpus_is_built_without_its_zip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def write_again(*args: object, **kwargs: object) -> Path:
        raise AssertionError("the corpus would be written again")

    monkeypatch.setattr(curve, "corpus_zip", write_again)
    folder = curve.unpacked(
        curve.corpus_path(64, folder=tmp_path, all_copies_among_originals=False)
    )
    folder.mkdir()
    (folder / curve.UNPACKED).touch()
    assert curve.source_of(64, tmp_path) == folder
    (folder / curve.UNPACKED).unlink()  # cut off while unpacking: not taken as the corpus
    with pytest.raises(AssertionError, match="written again"):
        curve.source_of(64, tmp_path)


def test_the_projection_spreads_the_visits_step_over_the_machines() -> None:
    """The visits step maps its searches and checks (on two nodes the driver did 6 % of its
    CPU), so more machines must shorten it in the projection; the build step stays on the
    driver's machine."""

    def size(visits: float, build: float) -> dict:
        steps = {"visits": {"cpu_s": visits}, "build": {"cpu_s": build}}
        return {"local": {"steps": steps}}

    found = curve.projection({"4000": size(3600.0, 360.0), "16000": size(14400.0, 1440.0)})
    hours = found["projected"]["1000000"]["hours_on_machines"]
    assert hours["16"] < hours["1"] / 4
    assert found["projected"]["1000000"]["driver_core_hours"] == 25.0  # the build step alone
