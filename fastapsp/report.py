"""What a run tells about itself: the JSON report (``--report``) and the sidecar record of a result file."""

from __future__ import annotations

import math

import numpy as np

from .partition import make_partition, partition_checksum

__all__ = ["run_report", "result_metadata"]


def result_metadata(graph, partition, opts, precision) -> dict:
    """What the sidecar of a ``.npy`` result records, so a result can be told from a foreign one."""
    from ._version import __version__

    return {"graph": graph.name, "graph_checksum": graph.checksum(), "directed": graph.directed,
            "k": partition.k, "partitioner": partition.method, "seed": partition.seed,
            "partition_checksum": partition_checksum(partition),
            "undirected_option": bool(opts.undirected), "input_format": opts.format, "dtype_reason": precision.reason,
            "version": __version__}


def run_report(graph, plan, seconds: dict) -> dict:
    """The report of a run of ``plan`` on ``graph`` with ``seconds`` per stage (``total`` among them, and
    ``compile``: the wait for the kernels to be built, reported as ``compile_seconds`` beside the stages).

    A dry run's report has the plan's own seconds only.
    """
    partition = plan.partition
    if partition is None:  # --sources computed by SSSP alone: no partition was made
        partition = make_partition(graph, np.zeros(graph.n, dtype=np.int32), 1, method="none", seed=-1,
                                   imbalance=math.inf, seconds=0.0)
    metrics = partition.metrics()
    # Kernel compilation (a first GPU run on a machine) is a fixed cost of its own, never a stage's.
    stages = {key: round(value, 6) for key, value in seconds.items() if key not in ("total", "compile")}
    report = {
        "graph": graph.name,
        "n": graph.n,
        "m": graph.num_edges,
        "arcs": graph.m,
        "directed": graph.directed,
        "k": partition.k,
        "partitioner": partition.method,
        "seed": partition.seed if partition.seed >= 0 else None,  # -1: labels loaded without their history
        "imbalance_allowed": partition.imbalance if math.isfinite(partition.imbalance) else None,
        "edge_cut": metrics["edge_cut"],
        "boundary_vertices": metrics["boundary_vertices"],
        "boundary_vertices_before_refine": metrics.get("boundary_vertices_before_refine"),
        "partition_pieces": metrics.get("pieces"),  # made by the ranks side by side (fastapsp/partition/pieces.py)
        "boundary_ratio": metrics["boundary_ratio"],
        "largest_part": metrics["largest_part"],
        "imbalance": metrics["imbalance"],
        "stages": stages,
        "total_seconds": round(seconds["total"], 6),
        "compile_seconds": round(seconds.get("compile", 0.0), 6),
        "ranks": plan.ranks,
        "backend": plan.backend,
        "device": plan.device,
        "output": plan.output,
        "k_choice": plan.k_choice,
        "sssp_method": plan.boundary_rows,
        "sssp_method_asked": plan.options.sssp_method,
        "dtype": plan.out_dtype,
        "dtype_reason": plan.precision.reason,
        "distance_bound": plan.precision.bound,
        "plan_seconds": {key: round(value, 6) for key, value in plan.seconds.items()},
    }
    if plan.prediction is not None:
        report["predicted_seconds"] = {name: {key: round(value, 6) for key, value in stages.items()}
                                       for name, stages in plan.prediction.items()}
    if plan.sources is not None:
        report.update(sources=int(plan.sources.size), sources_method=plan.source_rows)
    return report
