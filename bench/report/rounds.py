"""Rows of the ``make bench`` table for issue 22's cost goal (``checks_cost``) and issue 25's
scale curve (``scale``); ``bench.report.tables`` lays them out with the other parts'."""

from __future__ import annotations

from bench.common.report_cells import met

# The steps issue 22's checks run in: the frame check in the same-picture step, the keeper's
# evidence in the keeper step (a build of a commit without that step counts it as 0 s: its
# work is in the same-picture step there), the visits' links in the look-alike step.
CHECKED_STEPS = ("same-picture", "keeper", "lookalikes")


def checks_cost_rows(found: dict) -> list[list[str]]:
    """The build and the audit against the commit before any feature check: the checks may
    add at most the cold build's own time. The whole build's growth is reported beside
    them, with the publish step's, which hostile inputs round three grew after that commit."""
    base, now = found["median"]["baseline"], found["median"]["current"]
    allowed = base["build"]
    rows = [
        [
            f"issue 22: cold build, {found['archive']}, wall / CPU / peak",
            f"{now['build']:.1f} s / {now['build_cpu_s']:.1f} s / "
            f"{now['build_peak_rss_mib']:.0f} MiB",
            f"{base['build']:.1f} s / {base['build_cpu_s']:.1f} s / "
            f"{base['build_peak_rss_mib']:.0f} MiB on {found['baseline']}",
            f"+{now['build'] - base['build']:.1f} s",
            f"everything since {found['baseline']}, not the checks alone",
            "reported",
        ]
    ]
    if "step_build" in base and "step_build" in now:  # grown with hostile inputs round three
        rows.append(
            [
                "issue 22: of it, the publish step (build), wall",
                f"{now['step_build']:.1f} s",
                f"{base['step_build']:.1f} s on {found['baseline']}",
                f"+{now['step_build'] - base['step_build']:.1f} s",
                "not the checks: outputs verified together, JPEGs published without text",
                "reported",
            ]
        )
    checked = [f"step_{s}" for s in CHECKED_STEPS]
    if any(c in base for c in checked) and any(c in now for c in checked):
        added = sum(now.get(c, 0.0) - base.get(c, 0.0) for c in checked)
        rows.append(
            [
                f"issue 22: of it, the steps the checks run in ({', '.join(CHECKED_STEPS)}), wall",
                " + ".join(f"{now.get(c, 0.0):.1f}" for c in checked) + " s",
                " + ".join(f"{base.get(c, 0.0):.1f}" for c in checked)
                + f" s on {found['baseline']}",
                f"+{added:.1f} s",
                f"adds <= {allowed:.1f} s",
                met(added <= allowed),
            ]
        )
    audit, cpu = found.get("audit_s") or {}, found.get("audit_cpu_s") or {}
    if audit:
        rows.append(
            [
                "issue 22: `pericurate audit` of that build, wall / CPU",
                f"{audit['current']:.1f} s / {cpu['current']:.1f} s",
                f"{audit['baseline']:.1f} s / {cpu['baseline']:.1f} s on {found['baseline']}",
                f"+{audit['current'] - audit['baseline']:.1f} s",
                f"adds <= {allowed:.1f} s",
                met(audit["current"] - audit["baseline"] <= allowed),
            ]
        )
    return rows


def matching_rows(found: dict) -> list[list[str]]:
    """Feature matching on real films: faiss's exact search against OpenCV's brute force."""
    timed = found.get("matching") or {}
    if not timed.get("measured"):
        return []
    return [
        [
            f"issue 22: feature matching, {timed[kind]['pairs']} {label} (real films), per pair",
            f"{timed[kind]['match_features_ms']:.1f} ms (faiss search and MAGSAC)",
            f"{timed[kind]['brute_force_knn_ms']:.1f} ms (OpenCV brute-force neighbours alone)",
            f"{timed[kind]['brute_force_knn_ms'] / timed[kind]['match_features_ms']:.1f}x",
            "the same matches",
            met(timed[kind]["same_matches"] == timed[kind]["pairs"]),
        ]
        for kind, label in (("copy", "films and their 3 % crops"), ("distinct", "distinct pairs"))
    ]


def scale_rows(found: dict) -> list[list[str]]:
    """Each corpus size, locally and on two nodes: wall, CPU per original, the host's steal,
    peak memory, and whether the two-node outputs equal the local ones; then, per executor,
    whether the machine's CPU per original stays flat across the sizes."""
    rows = []
    for size in sorted(found["sizes"], key=int):
        for executor, run in found["sizes"][size].items():
            same = run.get("outputs_identical")
            rows.append(
                [
                    f"issue 25: cold build, {int(size):,} originals, {executor}",
                    f"{run['wall_s']:.1f} s ({run['ms_per_original']:.1f} ms per original), "
                    f"{_cpu(run, executor)}, "
                    f"{'driver ' if executor == 'ray' else ''}peak {run['peak_rss_mib']:.0f} MiB",
                    "",
                    "",
                    "outputs identical to local" if executor == "ray" else "",
                    met(same) if executor == "ray" else "",
                ]
            )
    for executor, flat in found.get("flatness", {}).items():
        rows.append(
            [
                f"issue 39: cost per original across sizes, {executor}",
                _flat_costs(flat),
                "",
                f"{flat['highest_over_lowest']:.2f}x",
                "flat (highest <= 1.15x lowest)",
                met(flat["flat"]),
            ]
        )
    return rows


def _flat_costs(flat: dict) -> str:
    """The costs judged, and the machine's CPU beside them when they are reference units (in
    results recorded before the reference work, the machine's CPU alone)."""
    machine = flat["machine_cpu_ms_per_original"]
    in_ms = ", ".join(f"{int(n):,}: {machine[n]:.1f} ms" for n in sorted(machine, key=int))
    if flat.get("judged_on") != "reference_units_per_original":
        return f"machine CPU {in_ms}"
    cost = flat["cost"]
    units = ", ".join(f"{int(n):,}: {cost[n]:.3f}" for n in sorted(cost, key=int))
    return (
        f"reference units {units} (machine CPU {in_ms}, "
        f"{flat['machine_cpu_highest_over_lowest']:.2f}x)"
    )


def _cpu(run: dict, executor: str) -> str:
    """The machine's CPU per original with the host's steal, or, in results recorded before
    the bench read them, the steps' own CPU (on Ray, the driver's alone)."""
    if "machine_cpu_ms_per_original" not in run:
        whose = "driver " if executor == "ray" else ""
        return f"{whose}CPU {run['cpu_ms_per_original']:.1f} ms per original"
    rounds = len(run["rounds"])
    outside = ""
    if "outside_share" in run:
        outside = f", {100 * run['outside_share']:.1f} % of it outside the build"
    reference = ""
    if "reference_units_per_original" in run:
        unit = run["reference"]
        reference = (
            f", {run['reference_units_per_original']:.3f} reference units per original (a unit "
            f"{unit['unit_ms']:.0f} ms, {unit['lowest_ms']:.0f}-{unit['highest_ms']:.0f} over "
            f"{unit['samples']} samples)"
        )
    return (
        f"machine CPU {run['machine_cpu_ms_per_original']:.1f} ms per original (median of "
        f"{rounds} round{'s' if rounds > 1 else ''}), steal {100 * run['steal_share']:.1f} %"
        f"{reference}{outside}"
    )
