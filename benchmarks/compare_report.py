"""Reporting for ``benchmarks/compare.py``: ``results.csv`` and ``report.md`` from the results."""

from __future__ import annotations

import csv
import math
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # _common and the compare_* modules
sys.path.insert(0, str(HERE.parent))  # measure this checkout's fastapsp, installed or not

from _common import REPO  # noqa: E402
from compare_experiment import CSV_FIELDS, OLD_SETTINGS, PARTITIONED, REFERENCE, Experiment  # noqa: E402

from fastapsp.timing import STAGES  # noqa: E402


def solved_with(r: dict) -> str | None:
    """The sssp_method that solved ``r`` (frontier for a result stored before the key); None when not solved."""
    if r.get("status") != "ok":
        return None
    return r.get("sssp_method") or OLD_SETTINGS["sssp_method"]


def write_csv(path: Path, records: list[dict]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=CSV_FIELDS, extrasaction="ignore")
        writer.writeheader()
        for r in records:
            row = dict(r)
            for s in STAGES:
                row[f"stage_{s}"] = (r.get("stages") or {}).get(s)
            meta = r.get("metadata") or {}
            row["device"], row["commit"] = meta.get("device"), meta.get("commit")
            pmeta = r.get("partition_metadata") or {}
            row["partition_device"], row["partition_host"] = pmeta.get("device"), pmeta.get("hostname")
            row["backend"], row["sssp_method"] = r.get("backend"), solved_with(r)
            row.update({key: r.get("settings", {}).get(key) for key in ("dtype", "output", "repetitions")})
            writer.writerow({key: ("" if row.get(key) is None else row.get(key)) for key in CSV_FIELDS})
    tmp.replace(path)


# --------------------------------------------------------------------- report
def _fmt_s(x) -> str:
    if x is None:
        return "–"
    return f"{x:.3g}" if x < 10 else f"{x:.1f}"


def _geomean(values) -> float | None:
    values = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def improvement_over_reference(records: list[dict], partitioners: list[str]) -> list[dict]:
    """Per partitioner: geometric means of METIS value / partitioner value over (graph, k)."""
    ok = {(r["graph"], r["k"], r["partitioner"]): r for r in records if r.get("status") == "ok"}
    rows = []
    for p in partitioners:
        pairs = [(ok[(g, k, REFERENCE)], r) for (g, k, q), r in ok.items() if q == p and (g, k, REFERENCE) in ok]
        row = {"partitioner": p, "pairs": len(pairs)}
        for field_, label in (("solve_seconds", "solve"), ("total_seconds", "total"),
                              ("boundary_vertices", "boundary"), ("edge_cut", "cut")):
            row[label] = _geomean(ref[field_] / r[field_] if r[field_] else None for ref, r in pairs)
        rows.append(row)
    return rows


def _exact_cell(r: dict) -> str:
    if r.get("exact") is None:
        return "not checked"
    if r["exact"]:
        return f"yes ({r['checked_rows']} rows)"
    err = r.get("max_abs_error")
    return f"**NO** (max error {'inf' if err is None else f'{err:.3g}'})"


def _machines_note(records: list[dict]) -> list[str]:
    """Report lines saying where the partitions were made when that is not where the solves ran."""
    def where(metas):
        devices = sorted({m.get("device", "?") for m in metas})
        hosts = sorted({m.get("hostname", "?") for m in metas})
        dates = sorted(m.get("date", "") for m in metas)
        return f"{', '.join(devices)} (host {', '.join(hosts)}), {dates[0]} to {dates[-1]}"

    lines = []
    ok = [r for r in records if r.get("status") == "ok" and r.get("metadata")]
    elsewhere = [r for r in ok if r.get("partition_metadata")
                 and r["partition_metadata"].get("hostname") != r["metadata"].get("hostname")]
    if elsewhere:
        made = where([r["partition_metadata"] for r in elsewhere])
        lines += [f"**Two machines.** The partitions of {len(elsewhere)} of the {len(ok)} solved configurations "
                  f"were computed beforehand with `--partition-only` on {made}, and reused, not recomputed, "
                  f"by the solve run: their *partition s* (and the partitioning part of *total s*) were measured "
                  f"on that machine's CPU, while *solve s* were measured on "
                  f"{where([r['metadata'] for r in elsewhere])}.", ""]
    pending = [r for r in records if r.get("status") == PARTITIONED]
    if pending:
        metas = [r.get("partition_metadata") or r.get("metadata") or {} for r in pending]
        lines += [f"**Partitioned only.** {len(pending)} configuration(s) were partitioned with `--partition-only` "
                  f"on {where(metas)} and are not solved yet: rerun without `--partition-only` (on the GPU "
                  f"machine) over this folder to solve them with these partitions.", ""]
    return lines


def write_report(folder: Path, exp: Experiment, records: list[dict], plots: list[tuple[str, str]],
                 plot_note: str | None) -> None:
    ok = [r for r in records if r.get("status") == "ok"]
    metas = [r["metadata"] for r in ok if r.get("metadata")]
    lines = [f"# Partitioner comparison: {exp.name}", ""]
    try:
        source = exp.source.resolve().relative_to(REPO)
    except ValueError:
        source = exp.source
    check = (f"{exp.check_samples} sampled rows per configuration compared with "
             f"`scipy.sparse.csgraph.dijkstra`" if exp.check_samples else "no exactness check")
    lines += [f"Experiment `{source}`: backend {exp.backend}, dtype {exp.dtype}, output {exp.output}, "
              f"{exp.repetitions} repetition(s), seed {exp.seed}, imbalance {exp.imbalance:g}, {check}.", ""]
    if metas:
        devices = sorted({m.get("device", "?") for m in metas})
        commits = sorted({m.get("commit", "?") for m in metas})
        hosts = sorted({m.get("hostname", "?") for m in metas})
        dates = sorted(m.get("date", "") for m in metas)
        versions = metas[-1].get("versions", {})
        lines += [f"Ran on {', '.join(devices)} (host {', '.join(hosts)}), commit {', '.join(commits)}, "
                  f"{dates[0]} to {dates[-1]}.  "
                  f"Versions: {', '.join(f'{k} {v}' for k, v in versions.items() if v)}.", ""]
    lines += _machines_note(records)
    lines += ["*solve s*: median seconds of the FastAPSP computation with the saved partition (without "
              "partitioning); *total s*: solve + partitioning seconds (with partitioning); *boundary*: "
              "boundary vertices in all parts (*max/part*: in the part with most); *ratio*: boundary / "
              "interior vertices; *imbalance*: largest part × k / n − 1.", ""]

    summary = improvement_over_reference(ok, exp.partitioners)
    lines += [f"## Summary: geometric-mean improvement over {REFERENCE.upper()}", "",
              f"{REFERENCE.upper()} value / partitioner value, geometric mean over every graph and k where both "
              "ran; above 1 is better than METIS.", "",
              "| partitioner | (graph, k) pairs | solve time | total time | boundary vertices | edge cut |",
              "|---|---:|---:|---:|---:|---:|"]
    for row in summary:
        cells = ["–" if row[c] is None else f"{row[c]:.3f}×" for c in ("solve", "total", "boundary", "cut")]
        lines.append(f"| {row['partitioner']} | {row['pairs']} | " + " | ".join(cells) + " |")
    lines.append("")

    lines += _refinement_table(records)
    by_graph: dict[str, list[dict]] = {}
    for r in records:
        by_graph.setdefault(r["graph"], []).append(r)
    for name, rows in by_graph.items():
        first = next((r for r in rows if r.get("status") in ("ok", PARTITIONED)), None)
        size = f" (n = {first['n']:,}, m = {first['m']:,})" if first else ""
        lines += [f"## {name}{size}", ""]
        # Where the boundary rows came from: one line when every solve used one method, else a column.
        methods = list(dict.fromkeys(m for m in map(solved_with, rows) if m is not None))
        mixed = len(methods) > 1
        if mixed:
            lines += [f"Solves: {' and '.join(methods)} methods (*method* column).", ""]
        elif methods:
            lines += [f"Solves: {methods[0]} method.", ""]
        lines += ["| k | partitioner | cut | boundary | max/part | ratio | imbalance | partition s | solve s "
                  "| total s | exact |" + (" method |" if mixed else ""),
                  "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|" + ("---|" if mixed else "")]
        for r in rows:
            method = f" {solved_with(r) or ''} |" if mixed else ""
            if r.get("status") not in ("ok", PARTITIONED):
                error = str(r.get("error", "?")).replace("|", "\\|")
                lines.append(f"| {r['k']} | {r['partitioner']} | | | | | | | | | error: {error} |{method}")
                continue
            solved = r["status"] == "ok"
            lines.append(
                f"| {r['k']} | {r['partitioner']} | {r['edge_cut']:,} | {r['boundary_vertices']:,} | "
                f"{r['boundary_max_per_part']:,} | {r['boundary_ratio']:.4f} | {r['imbalance']:.3f} | "
                f"{_fmt_s(r['partition_seconds'])} | {_fmt_s(r.get('solve_seconds'))} | "
                f"{_fmt_s(r.get('total_seconds'))} | {_exact_cell(r) if solved else 'not solved yet'} |{method}")
        lines.append("")

    lines += ["## Plots", ""]
    if plot_note:
        lines += [plot_note, ""]
    for file, title in plots:
        lines += [f"### {title}", "", f"![{title}]({file})", ""]
    if exp.missing:
        lines += ["## Skipped graphs", ""]
        lines += [f"- `{g.name}`: file `{g.given}` not found" for g in exp.missing]
        lines.append("")
    tmp = folder / ".report.md.tmp"
    tmp.write_text("\n".join(lines) + "\n")
    tmp.replace(folder / "report.md")


def _refinement_table(records: list[dict]) -> list[str]:
    """Boundary vertices before and after the boundary refinement (``NAME+b``), and against METIS."""
    refined = [r for r in records if r.get("status") in ("ok", PARTITIONED)
               and r.get("boundary_vertices_before_refine") is not None]
    if not refined:
        return []
    metis = {(r["graph"], r["k"]): r["boundary_vertices"] for r in records
             if r.get("status") in ("ok", PARTITIONED) and r.get("partitioner") == REFERENCE}
    lines = ["## Boundary refinement", "",
             "Boundary vertices of the partition before and after the boundary refinement, the change, "
             f"and the refined count against {REFERENCE.upper()}'s at the same k (negative: fewer).", "",
             f"| graph | k | partitioner | before | after | change | vs {REFERENCE.upper()} | refine s |",
             "|---|---:|---|---:|---:|---:|---:|---:|"]
    for r in refined:
        before, after = r["boundary_vertices_before_refine"], r["boundary_vertices"]
        change = f"{(after - before) / before:+.1%}" if before else "–"
        base = metis.get((r["graph"], r["k"]))
        versus = f"{(after - base) / base:+.1%}" if base else "–"
        lines.append(f"| {r['graph']} | {r['k']} | {r['partitioner']} | {before:,} | {after:,} | {change} | "
                     f"{versus} | {_fmt_s(r.get('refine_seconds'))} |")
    lines.append("")
    return lines
