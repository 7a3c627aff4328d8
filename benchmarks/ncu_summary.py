#!/usr/bin/env python3
"""One record per profiled kernel launch from Nsight Compute's raw CSV page (``ncu --csv --page raw``).

For each launch: the kernel's name, grid and block, its duration, the throughputs as a percentage of the
device's peak (SM, memory, DRAM, L2, the ALU pipe, instruction issue), the L2 hit rate, the theoretical
and achieved occupancy, the registers per thread and
what limits the resident blocks, and the four largest warp-stall reasons (cycles per issued instruction).
With ``--report`` (the ``fastapsp solve --report`` of the same graph and settings) the record also holds
the graph's n, k and mean boundary per component.

    python benchmarks/ncu_summary.py ncu-roadNY.csv --graph roadNY --report report-roadNY.json --json out.json
"""

from __future__ import annotations

import argparse
import csv
import json
import sys

COLUMNS = {  # record key: raw metric name
    "duration_us": "gpu__time_duration.sum",
    "sm_throughput_pct": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "memory_throughput_pct": "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "dram_throughput_pct": "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "l2_throughput_pct": "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "l2_hit_rate_pct": "lts__t_sector_hit_rate.pct",
    "alu_pipe_pct": "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "issue_active_pct": "sm__issue_active.avg.pct_of_peak_sustained_elapsed",
    "achieved_occupancy_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "theoretical_occupancy_pct": "sm__maximum_warps_per_active_cycle_pct",
    "registers_per_thread": "launch__registers_per_thread",
    "waves_per_sm": "launch__waves_per_multiprocessor",
    "block_limit_registers": "launch__occupancy_limit_registers",
    "block_limit_shared_mem": "launch__occupancy_limit_shared_mem",
    "block_limit_warps": "launch__occupancy_limit_warps",
}
STALL = "smsp__average_warp_latency_issue_stalled_"
STALL_ALT = "smsp__average_warps_issue_stalled_"
TIME_UNITS = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3, "s": 1e6,
              "second": 1e6}


def _number(text: str):
    try:
        return float(str(text).replace(",", ""))
    except ValueError:
        return None


def read_raw(path: str) -> list[dict]:
    """``[{metric: (unit, value)} | {"Kernel Name": ..., ...}]``, one per launch, from the raw CSV page.

    Lines before the header (the profiler's own ``==PROF==`` notes, the program's output) are skipped;
    the header is the first line whose first field is ``ID``, the line after it holds the units.
    """
    with open(path, newline="", errors="replace") as fh:
        lines = fh.read().splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        raise SystemExit(f"{path}: no ncu raw CSV header (a line starting with \"ID\") found")
    rows = list(csv.reader(lines[start:]))
    header, units, body = rows[0], rows[1], rows[2:]
    launches = []
    for row in body:
        if len(row) != len(header):
            continue  # a line of the program's own output
        launches.append({name: (unit, value) for name, unit, value in zip(header, units, row)})
    return launches


def summarise(launch: dict) -> dict:
    out = {"kernel": launch.get("Kernel Name", ("", "?"))[1], "grid": launch.get("Grid Size", ("", None))[1],
           "block": launch.get("Block Size", ("", None))[1]}
    for key, metric in COLUMNS.items():
        unit, value = launch.get(metric, ("", None))
        number = _number(value) if value is not None else None
        if number is not None and key == "duration_us":
            number *= TIME_UNITS.get(unit.strip().lower(), 1.0)
        out[key] = number
    stalls = {}
    for name, (_, value) in launch.items():
        for prefix in (STALL, STALL_ALT):
            if name.startswith(prefix):
                number = _number(value)
                reason = name[len(prefix):].split(".")[0].replace("_per_issue_active", "")
                if number is not None and reason not in ("", "per_issue_active"):
                    stalls[reason] = max(number, stalls.get(reason, 0.0))
    out["top_stalls"] = sorted(([r, round(v, 3)] for r, v in stalls.items()), key=lambda x: -x[1])[:4]
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv", help="ncu --csv --page raw output")
    parser.add_argument("--graph", default=None)
    parser.add_argument("--report", default=None, help="the solve's --report JSON (n, k, boundary)")
    parser.add_argument("--json", default=None, help="write the records here")
    args = parser.parse_args(argv)
    records = [summarise(launch) for launch in read_raw(args.csv)]
    if not records:
        print(f"{args.csv}: no kernel launch profiled", file=sys.stderr)
        return 1
    meta: dict = {"graph": args.graph}
    if args.report:
        with open(args.report) as fh:
            report = json.load(fh)
        meta.update(n=report.get("n"), k=report.get("k"), boundary_vertices=report.get("boundary_vertices"),
                    device=report.get("device"), commit=report.get("commit") or report.get("version"),
                    min_plus_seconds=(report.get("stages") or {}).get("min_plus"))
        if report.get("k") and report.get("boundary_vertices") is not None:
            meta["mean_boundary_per_component"] = round(report["boundary_vertices"] / report["k"], 2)
    for r in records:
        print(f"{r['kernel'][:28]:28s} grid {str(r['grid']):>16s} {r['duration_us'] or 0:9.1f} us  "
              f"SM {r['sm_throughput_pct'] or 0:5.1f}%  mem {r['memory_throughput_pct'] or 0:5.1f}%  "
              f"DRAM {r['dram_throughput_pct'] or 0:5.1f}%  L2 {r['l2_throughput_pct'] or 0:5.1f}%  occ {r['achieved_occupancy_pct'] or 0:5.1f}/"
              f"{r['theoretical_occupancy_pct'] or 0:5.1f}%  regs {r['registers_per_thread']}  "
              f"stalls {', '.join(f'{a} {b}' for a, b in r['top_stalls'])}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({**meta, "launches": records}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
