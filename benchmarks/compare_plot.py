"""Plots for ``benchmarks/compare.py`` (PNG, with matplotlib when it is installed)."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # _common and the compare_* modules
sys.path.insert(0, str(HERE.parent))  # measure this checkout's fastapsp, installed or not

import numpy as np

from fastapsp.pipeline import STAGES  # noqa: E402


def write_plots(folder: Path, records: list[dict], partitioners: list[str]) -> tuple[list, str | None]:
    """PNG plots; returns [(file, title)] and a note when they could not be drawn."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return [], "Plots skipped: matplotlib is not installed (`pip install matplotlib`, or the `bench` extra)."
    ok = [r for r in records if r.get("status") == "ok"]
    if not ok:
        return [], "No plots: no configuration finished."
    graphs = list(dict.fromkeys(r["graph"] for r in ok))
    parts = [p for p in partitioners if any(r["partitioner"] == p for r in ok)]
    colors = {p: plt.get_cmap("tab10")(i % 10) for i, p in enumerate(parts)}
    markers = dict(zip(parts, "osD^vP*Xh<>p" * 2))
    plots = []

    def grid(count, width, height):
        fig, axes = plt.subplots(count, 1, figsize=(width, height * count), squeeze=False)
        return fig, axes[:, 0]

    # 1. Boundary ratio against solve time, one marker per partitioner.
    fig, axes = grid(len(graphs), 7, 4)
    for ax, g in zip(axes, graphs):
        for p in parts:
            rows = [r for r in ok if r["graph"] == g and r["partitioner"] == p]
            if rows:
                ax.scatter([r["boundary_ratio"] for r in rows], [r["solve_seconds"] for r in rows],
                           marker=markers[p], color=colors[p], label=p, s=40)
                for r in rows:
                    ax.annotate(f"k={r['k']}", (r["boundary_ratio"], r["solve_seconds"]), fontsize=6,
                                xytext=(3, 3), textcoords="offset points")
        ax.set_title(g)
        ax.set_xlabel("boundary / interior vertices")
        ax.set_ylabel("solve seconds")
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    fig.savefig(folder / "boundary_vs_runtime.png", dpi=110)
    plt.close(fig)
    plots.append(("boundary_vs_runtime.png", "Boundary ratio vs solve time"))

    # 2. Solve time per partitioner, grouped by k, one panel per graph; hatched: partitioning on top.
    fig, axes = grid(len(graphs), max(7, 1.2 * len(parts) + 3), 3.5)
    width = 0.8 / max(1, len(parts))
    for ax, g in zip(axes, graphs):
        ks = sorted({r["k"] for r in ok if r["graph"] == g})
        for j, p in enumerate(parts):
            found = {r["k"]: r for r in ok if r["graph"] == g and r["partitioner"] == p}
            x = [i + (j - (len(parts) - 1) / 2) * width for i, k in enumerate(ks) if k in found]
            solve = [found[k]["solve_seconds"] for k in ks if k in found]
            part_s = [found[k]["partition_seconds"] for k in ks if k in found]
            ax.bar(x, solve, width, color=colors[p], label=p)
            ax.bar(x, part_s, width, bottom=solve, color=colors[p], alpha=0.35, hatch="//")
        ax.set_xticks(range(len(ks)), [f"k={k}" for k in ks])
        ax.set_title(f"{g}: solve seconds (hatched: + partitioning)")
        ax.set_ylabel("seconds")
        ax.grid(True, axis="y", alpha=0.3)
    axes[0].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    fig.savefig(folder / "runtime_by_partitioner.png", dpi=110)
    plt.close(fig)
    plots.append(("runtime_by_partitioner.png", "Solve time per partitioner"))

    # 3. Per-stage breakdown, one stacked bar per (k, partitioner).
    used = [s for s in STAGES if any((r.get("stages") or {}).get(s, 0) > 0 for r in ok)]
    stage_colors = {s: plt.get_cmap("Set2")(i % 8) for i, s in enumerate(STAGES)}
    most = max(sum(r["graph"] == g for r in ok) for g in graphs)
    fig, axes = grid(len(graphs), max(7, 0.45 * most + 3), 3.8)
    for ax, g in zip(axes, graphs):
        rows = sorted((r for r in ok if r["graph"] == g), key=lambda r: (r["k"], parts.index(r["partitioner"])))
        bottom = np.zeros(len(rows))
        for s in used:
            values = np.array([r["stages"].get(s, 0.0) for r in rows])
            ax.bar(range(len(rows)), values, 0.7, bottom=bottom, color=stage_colors[s], label=s)
            bottom += values
        ax.set_xticks(range(len(rows)), [f"{r['partitioner']}\nk={r['k']}" for r in rows], rotation=90, fontsize=7)
        ax.set_title(f"{g}: seconds per stage")
        ax.set_ylabel("seconds")
        ax.grid(True, axis="y", alpha=0.3)
    axes[0].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    fig.savefig(folder / "stage_breakdown.png", dpi=110)
    plt.close(fig)
    plots.append(("stage_breakdown.png", "Per-stage breakdown"))
    return plots, None
