#!/usr/bin/env python3
"""Tabulate the reports that ``slurm/compare_array.sbatch`` wrote into a results folder.

One row per config line (graph, k, partitioner, ranks, backend): edge cut,
boundary vertices, boundary ratio, partitioning seconds, and the fastest and
median total seconds over the repeats.  Only the standard library is needed::

    python slurm/collect_results.py results/compare
    python slurm/collect_results.py results/compare --csv compare.csv
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import statistics
import sys
from pathlib import Path

COLUMNS = ("graph", "n", "k", "partitioner", "ranks", "backend", "edge_cut", "boundary_vertices",
           "boundary_ratio", "partition_seconds", "repeats", "best_seconds", "median_seconds", "config_line")


def collect(folder) -> list[dict]:
    """The rows of the table, sorted by graph, k and best time."""
    groups: dict = {}
    for path in sorted(Path(folder).glob("*.line*.run*.json")):
        with open(path) as fh:
            report = json.load(fh)
        key = (report.get("config_index"), report["graph"], report["k"], report["partitioner"],
               report["ranks"], report["backend"])
        groups.setdefault(key, []).append(report)
    rows = []
    for reports in groups.values():
        first = reports[0]
        times = [r["total_seconds"] for r in reports]
        row = {c: first.get(c) for c in COLUMNS}
        row.update(repeats=len(reports), best_seconds=min(times), median_seconds=statistics.median(times))
        rows.append(row)
    rows.sort(key=lambda r: (str(r["graph"]), r["k"], r["best_seconds"]))
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Table of the compare_array.sbatch reports in a folder.")
    parser.add_argument("folder", help="RESULTS folder of compare_array.sbatch")
    parser.add_argument("--csv", metavar="FILE", help="also write the table as CSV ('-' for stdout)")
    args = parser.parse_args(argv)
    rows = collect(args.folder)
    if not rows:
        print(f"{args.folder}: no '*.line*.run*.json' reports", file=sys.stderr)
        return 1
    shown = ("graph", "k", "partitioner", "ranks", "backend", "edge_cut", "boundary_vertices",
             "partition_seconds", "repeats", "best_seconds", "median_seconds")
    text = [[_fmt(row[c]) for c in shown] for row in rows]
    widths = [max(len(c), *(len(t[i]) for t in text)) for i, c in enumerate(shown)]
    print("  ".join(c.ljust(w) for c, w in zip(shown, widths)))
    for t in text:
        print("  ".join(v.ljust(w) for v, w in zip(t, widths)))
    if args.csv:
        with (contextlib.nullcontext(sys.stdout) if args.csv == "-"
              else open(args.csv, "w", newline="")) as fh:
            writer = csv.DictWriter(fh, fieldnames=COLUMNS)
            writer.writeheader()
            writer.writerows(rows)
    return 0


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


if __name__ == "__main__":
    sys.exit(main())
