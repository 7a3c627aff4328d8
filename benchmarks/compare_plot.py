"""Plots for ``benchmarks/compare.py`` (PNG, with matplotlib when it is installed)."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # _common and the compare_* modules
sys.path.insert(0, str(HERE.parent))  # measure this checkout's fastapsp, installed or not

import numpy as np

from compare_experiment import PARTITIONED  # noqa: E402

from fastapsp.timing import STAGES  # noqa: E402


def write_plots(folder: Path, records: list[dict], partitioners: list[str]) -> tuple[list, str | None]:
    """PNG plots; returns [(file, title)] and a note when they could not be drawn."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return [], "Plots skipped: matplotlib is not installed (`pip install matplotlib`, or the `bench` extra)."
    ok = [r for r in records if r.get("status") == "ok"]
    measured = [r for r in records if r.get("status") in ("ok", PARTITIONED)]
    if not measured:
        return [], "No plots: no configuration finished."
    parts = [p for p in partitioners if any(r["partitioner"] == p for r in measured)]
    style = {"colors": {p: plt.get_cmap("tab10")(i % 10) for i, p in enumerate(parts)},
             "markers": dict(zip(parts, "osD^vP*Xh<>p" * 2)), "parts": parts}
    plots = []
    for file, title, rows, draw, size in (
            ("boundary_vs_runtime.png", "Boundary ratio vs solve time", ok, _boundary_vs_runtime, (7, 4)),
            ("runtime_by_partitioner.png", "Solve time per partitioner", ok, _runtime_bars,
             (max(7, 1.2 * len(parts) + 3), 3.5)),
            ("stage_breakdown.png", "Per-stage breakdown", ok, _stage_bars, None),
            ("boundary_refinement.png", "Boundary vertices before and after the boundary refinement",
             [r for r in measured if r.get("boundary_vertices_before_refine") is not None], _refinement_bars,
             None)):
        graphs = list(dict.fromkeys(r["graph"] for r in rows))
        if not graphs:
            continue
        if size is None:  # as wide as the most bars of one graph
            most = max(sum(r["graph"] == g for r in rows) for g in graphs)
            size = (max(7, 0.45 * most + 3), 3.8)
        fig, axes = plt.subplots(len(graphs), 1, figsize=(size[0], size[1] * len(graphs)), squeeze=False)
        for ax, g in zip(axes[:, 0], graphs):
            draw(ax, g, [r for r in rows if r["graph"] == g], style, plt)
            ax.grid(True, axis="y" if draw is not _boundary_vs_runtime else "both", alpha=0.3)
        axes[0, 0].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
        fig.tight_layout()
        fig.savefig(folder / file, dpi=110)
        plt.close(fig)
        plots.append((file, title))
    return plots, None


def _boundary_vs_runtime(ax, graph, rows, style, plt):
    """Boundary ratio against solve time, one marker per partitioner."""
    for p in style["parts"]:
        mine = [r for r in rows if r["partitioner"] == p]
        if mine:
            ax.scatter([r["boundary_ratio"] for r in mine], [r["solve_seconds"] for r in mine],
                       marker=style["markers"][p], color=style["colors"][p], label=p, s=40)
            for r in mine:
                ax.annotate(f"k={r['k']}", (r["boundary_ratio"], r["solve_seconds"]), fontsize=6,
                            xytext=(3, 3), textcoords="offset points")
    ax.set_title(graph)
    ax.set_xlabel("boundary / interior vertices")
    ax.set_ylabel("solve seconds")


def _runtime_bars(ax, graph, rows, style, plt):
    """Solve time per partitioner grouped by k; hatched: partitioning on top."""
    parts = style["parts"]
    ks = sorted({r["k"] for r in rows})
    width = 0.8 / max(1, len(parts))
    for j, p in enumerate(parts):
        found = {r["k"]: r for r in rows if r["partitioner"] == p}
        x = [i + (j - (len(parts) - 1) / 2) * width for i, k in enumerate(ks) if k in found]
        solve = [found[k]["solve_seconds"] for k in ks if k in found]
        part_s = [found[k]["partition_seconds"] for k in ks if k in found]
        ax.bar(x, solve, width, color=style["colors"][p], label=p)
        ax.bar(x, part_s, width, bottom=solve, color=style["colors"][p], alpha=0.35, hatch="//")
    ax.set_xticks(range(len(ks)), [f"k={k}" for k in ks])
    ax.set_title(f"{graph}: solve seconds (hatched: + partitioning)")
    ax.set_ylabel("seconds")


def _stage_bars(ax, graph, rows, style, plt):
    """Per-stage seconds, one stacked bar per (k, partitioner)."""
    rows = sorted(rows, key=lambda r: (r["k"], style["parts"].index(r["partitioner"])))
    stage_colors = {s: plt.get_cmap("Set2")(i % 8) for i, s in enumerate(STAGES)}
    bottom = np.zeros(len(rows))
    for s in STAGES:
        values = np.array([(r.get("stages") or {}).get(s, 0.0) for r in rows])
        if values.any():
            ax.bar(range(len(rows)), values, 0.7, bottom=bottom, color=stage_colors[s], label=s)
            bottom += values
    _label_bars(ax, rows)
    ax.set_title(f"{graph}: seconds per stage")
    ax.set_ylabel("seconds")


def _refinement_bars(ax, graph, rows, style, plt):
    """Boundary vertices of every refined partition before (light) and after (dark) the refinement."""
    rows = sorted(rows, key=lambda r: (r["k"], style["parts"].index(r["partitioner"])))
    x = np.arange(len(rows))
    colors = [style["colors"][r["partitioner"]] for r in rows]
    ax.bar(x - 0.18, [r["boundary_vertices_before_refine"] for r in rows], 0.36, color=colors, alpha=0.35,
           label="before refinement")
    ax.bar(x + 0.18, [r["boundary_vertices"] for r in rows], 0.36, color=colors, label="after refinement")
    for i, r in enumerate(rows):
        before = r["boundary_vertices_before_refine"]
        if before:
            ax.annotate(f"{(r['boundary_vertices'] - before) / before:+.1%}", (i + 0.18, r["boundary_vertices"]),
                        fontsize=6, ha="center", xytext=(0, 2), textcoords="offset points")
    _label_bars(ax, rows)
    ax.set_title(f"{graph}: boundary vertices before (light) and after (dark) the boundary refinement")
    ax.set_ylabel("boundary vertices")


def _label_bars(ax, rows):
    ax.set_xticks(range(len(rows)), [f"{r['partitioner']}\nk={r['k']}" for r in rows], rotation=90, fontsize=7)
