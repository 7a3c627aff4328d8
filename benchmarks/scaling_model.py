#!/usr/bin/env python3
"""A scaling model of ``fastapsp solve``: from one-GPU stage seconds to the time on p GPUs, checked against
measured multi-GPU reports.

Inputs are ``fastapsp solve --report`` JSON files (``benchmarks/results/scaling/inputs/`` holds the ones
used here).  A one-GPU report of a graph on a device is the *reference*; every prediction scales its
per-stage seconds, first to the target graph (size laws), then to p ranks (rank laws).

Size laws (a target graph described by n vertices, m arcs, k components of c = n/k vertices, B boundary
vertices, b = B/k per component; the reference's values carry a 0):

==================================  ==================================================
stage                               seconds scale with
==================================  ==================================================
read, choose_k, partition           m / m0 (one pass over the arcs)
local_fw                            n c^2 / (n0 c0^2) (k closures of c^3)
boundary_graph                      the cost model's upper levels (``fastapsp.cost``: super-groups
                                    closed level by level, the top densely) of the target's B and
                                    b over the reference's; ``--family-exponent e``: (B / B0)^e
boundary_rows                       B n / (B0 n0) (a row of n per boundary vertex)
min_plus, assemble                  n^2 b / (n0^2 b0) (every row of n through b hops)
extract                             n / n0
the rest (sssp, build, ...), other  n^2 / n0^2, and the report's seconds outside any
                                    stage stay as they are
==================================  ==================================================

Rank laws (the schedule of the inputs: every rank closes every component and keeps its own):

* serial stages stay: read, choose_k, partition, local_fw, boundary_graph, and the seconds outside any
  stage, plus the process start (``startup_seconds``); on p > 1 ranks the process start also holds MPI's
  start, which one process never makes: the median over the inputs' multi-rank runs of their
  ``startup_seconds`` less their reference's (:func:`mpi_start`; ``--mpi-start`` to give it).  The
  launcher's own start before the processes exist (``mpirun``: 0.22-0.25 s on the lent hosts,
  ``benchmarks/results/two-ranks-one-gpu-f5f09bf/``) is in no report, so in no prediction either.  The
  partition stays whole because the runs modelled partition with Jet, which ``--parallel-partition auto``
  keeps on rank 0: a rank's cut into pieces costs about what Jet does (``fastapsp.cost.pieces_seconds``, docs/mpi.md);
* per-component stages (boundary_rows, extract, min_plus, assemble and the rest) divide by p, times the
  schedule's imbalance ``ceil(k/p) p / k`` (whole components per rank);
* the other schedule, each rank closes its share and the closed boundary rows travel, is also
  evaluated: local_fw divides too, and ``B c`` distances of 4 bytes travel at the rate measured in the
  inputs that shared them (``share_rows`` seconds, slowest rank included);
* on the GPUs of one node (p <= ``NODE_GPUS``), where the ranks copy closures GPU to GPU
  (``fastapsp/peers.py``; the rate from the reports' ``peer_bytes_per_second`` or ``--peer-rate``): local_fw
  divides, the upper levels below the top divide (the top, closed by every rank, is the reference's last
  ``upper_levels`` entry's share of their closing), and the ``B c`` distances travel at that rate.
  The prediction is the smallest of the totals; the table names the schedule.  A run that measured a
  link but had every rank close every component is checked against the same schedule with local_fw
  whole and no rows travelling (only its upper levels shared).

Targets: ``del21-unit`` as measured; ``del22-unit`` (2^22 points, m = 3n, c and b as del21); and
``road-24M``, ``scripts/make_grid_road.py --rows 4899 --cols 4899`` (n = 24,000,201, m = 2n arcs of each
direction, c as roadFLA's run, b = 4 sqrt(c): the crossings on the four sides of a square block) scaled
from roadFLA.  Sizes beyond the references are extrapolations of these laws, not measurements; the GPU
memory they need is not checked here.  The upper levels' law gave del22-unit's measured boundary_graph
from del21-unit's within 2% (5.85 against 5.78 s, four H200s at 3d3793b); for road-24M it prices the first level that
stops shrinking as one dense closure, where the package widens its super-groups instead, so its
boundary_graph there is an upper bound.

Multi-node use: every node needs the graph file, or its binary cache (``--graph-cache DIR``), on
storage all nodes see, and one rank per GPU; the first rank of each node reads (fastapsp/io/nodes.py).
``slurm/multi_node.sbatch`` runs it; slurm/README.md says how.

    python benchmarks/scaling_model.py                         # the stored inputs
    python benchmarks/scaling_model.py --reports r1.json r2.json --json out.json
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
INPUTS = os.path.join(HERE, "results", "scaling", "inputs")
GPUS = (1, 2, 4, 8, 64)

SERIAL = ("read", "backend", "choose_k", "partition", "local_fw", "boundary_graph")
DIVIDED = ("boundary_rows", "extract", "min_plus", "assemble", "sssp", "build", "floyd_warshall", "stats",
           "host_copy", "write")
BYTES_PER_DISTANCE = 4  # float32, the dtype of the inputs
NODE_GPUS = 8  # GPUs of one node: the ranks beyond one node copy closures through the host


def load(paths) -> list[dict]:
    """The solve reports among ``paths`` (files with per-stage seconds)."""
    reports = []
    for path in paths:
        with open(path) as fh:
            report = json.load(fh)
        if "solve_seconds" in report:  # a gpu_pipeline.py record: the process's seconds and the report's apart
            verify = (report.get("verified_in_run") or {}).get("verify_seconds") or 0.0
            report = dict(report, process_seconds=report["total_seconds"],
                          total_seconds=report["solve_seconds"] - verify)  # the in-run check is not the solve's
        if isinstance(report.get("stages"), dict) and "total_seconds" in report:
            report["_path"] = os.path.basename(path)
            report["graph"] = graph_name(report["graph"])
            reports.append(report)
    return reports


def graph_name(name: str) -> str:
    """A report's graph without its file's extensions (``del21-unit.mtx.gz`` as ``del21-unit``: ``.gz``, then
    a graph extension that ``fastapsp.read_graph`` knows), so that a plain ``fastapsp solve`` report and a
    benchmark's name the same graph alike."""
    from fastapsp.io import _EXTENSIONS

    name = os.path.basename(str(name))
    if name.lower().endswith(".gz"):
        name = name[:-3]
    stem, extension = os.path.splitext(name)
    return stem if extension.lower() in _EXTENSIONS else name


def device_of(report: dict) -> str:
    return str(report.get("device", "?")).split(" ", 1)[-1]


def spec_of(report: dict) -> dict:
    n, k = report["n"], report["k"]
    return {"n": n, "m": report["m"], "k": k, "c": n / k, "B": report["boundary_vertices"],
            "b": report["boundary_vertices"] / k}


def references(reports) -> dict:
    """``(graph, device) -> one-GPU report`` (the fastest where there are several)."""
    best: dict = {}
    for r in reports:
        if r.get("ranks", 1) == 1:
            key = (r["graph"], device_of(r))
            if key not in best or r["total_seconds"] < best[key]["total_seconds"]:
                best[key] = r
    return best


def upper_levels_law(target: dict, ref_spec: dict) -> float:
    """The upper levels' seconds of ``target`` over those of the reference, as the cost model prices them on
    the GPU (:func:`fastapsp.cost._upper_levels_seconds`: above the dense limit each level's super-groups
    cost about ``super_size**2`` relaxations a vertex, and the top a dense closure of at most the limit),
    so a graph of many more boundary vertices grows by its levels, not by a power of B."""
    import numpy as np

    from fastapsp.cost import _rates, _upper_levels_seconds
    from fastapsp.stages.boundary_graph import DENSE_LIMIT, SUPER_SIZE

    rates = _rates("cupy", np.float32)

    def seconds(spec):
        return float(_upper_levels_seconds(spec["B"], max(spec["b"], 1.0), rates, DENSE_LIMIT["cupy"],
                                           SUPER_SIZE["cupy"]))

    return seconds(target) / seconds(ref_spec)


def share_rate(reports) -> float | None:
    """Bytes per second of the closed boundary rows' allgather, pooled over the reports that shared them."""
    sent = seconds = 0.0
    for r in reports:
        t = r["stages"].get("share_rows", 0.0)
        if r.get("ranks", 1) > 1 and t > 0.01:
            s = spec_of(r)
            sent += s["B"] * s["c"] * BYTES_PER_DISTANCE
            seconds += t
    return sent / seconds if seconds else None


def peer_rate(reports) -> float | None:
    """Bytes per second of the ranks' GPU-to-GPU copies (``peer_bytes_per_second``), the median over the
    reports that measured one, or None."""
    rates = sorted(r["peer_bytes_per_second"] for r in reports if r.get("peer_bytes_per_second"))
    return float(rates[len(rates) // 2]) if rates else None


def mpi_start(reports, refs: dict) -> float:
    """Seconds that MPI's start adds to a process's start: the median, over the multi-rank reports that
    have a one-GPU reference of their graph on their device, of their ``startup_seconds`` less the
    reference's; 0 where there is none."""
    extra = [(r.get("startup_seconds") or 0.0) - (refs[key].get("startup_seconds") or 0.0)
             for r in reports if r.get("ranks", 1) > 1 and (key := (r["graph"], device_of(r))) in refs]
    return float(statistics.median(extra)) if extra else 0.0


def top_share(ref: dict) -> float:
    """The share of the upper levels' closing seconds that the top level took in ``ref`` (every rank closes
    the top), 1 where the report does not say (then nothing of the upper levels divides)."""
    levels = ref.get("upper_levels") or []
    if levels and not isinstance(levels[0], dict):  # several ranks: rank 0's
        levels = levels[0]
    closing = sum(level.get("close", 0.0) for level in levels)
    return levels[-1].get("close", 0.0) / closing if closing > 0 else 1.0


def scaled_stages(ref: dict, target: dict, exponent: float | None = None) -> dict:
    """The reference's stage seconds scaled to the target graph by the size laws (``exponent``: the upper
    levels as ``(B / B0) ** exponent`` instead of the cost model's levels)."""
    s0 = spec_of(ref)
    n, n0 = target["n"], s0["n"]
    law = {
        "read": target["m"] / s0["m"], "choose_k": target["m"] / s0["m"], "partition": target["m"] / s0["m"],
        "backend": 1.0,  # finding the GPU: the same on any graph
        "local_fw": n * target["c"] ** 2 / (n0 * s0["c"] ** 2),
        "boundary_graph": upper_levels_law(target, s0) if exponent is None else (target["B"] / s0["B"]) ** exponent,
        "boundary_rows": target["B"] * n / (s0["B"] * n0),
        "min_plus": n * n * target["b"] / (n0 * n0 * s0["b"]),
        "assemble": n * n * target["b"] / (n0 * n0 * s0["b"]),
        "extract": n / n0,
    }
    stages = {name: seconds * law.get(name, (n / n0) ** 2) for name, seconds in ref["stages"].items()
              if name != "share_rows"}
    stages["other"] = max(0.0, ref["total_seconds"] - sum(ref["stages"].values()))
    return stages


def predict(stages: dict, target: dict, p: int, rate: float | None, startup: float, peer: float | None = None,
            top: float = 1.0, mpi: float = 0.0) -> dict:
    """Seconds on p ranks under every schedule; the smallest is the prediction.  ``peer``: the GPU-to-GPU
    rate (one node, p <= NODE_GPUS); ``top``: the upper levels' share that every rank closes; ``mpi``: what
    MPI's start adds to the process start ``startup`` on more than one rank."""
    k = target["k"]
    imbalance = math.ceil(k / p) * p / k
    serial = sum(stages.get(s, 0.0) for s in SERIAL) + stages["other"] + startup + (mpi if p > 1 else 0.0)
    divided = sum(stages.get(s, 0.0) for s in DIVIDED) * imbalance / p
    everywhere = serial + divided
    out = {"p": p, "imbalance": round(imbalance, 4), "serial": serial, "divided": divided,
           "close_everywhere": everywhere, "total": everywhere, "schedule": "every rank closes every component"}
    if p > 1 and rate:
        traffic = target["B"] * target["c"] * BYTES_PER_DISTANCE / rate
        shared = everywhere - stages.get("local_fw", 0.0) * (1 - imbalance / p) + traffic
        out["close_share"] = shared
        if shared < everywhere:
            out.update(total=shared, schedule="each rank closes its share, rows travel")
    if 1 < p <= NODE_GPUS and peer:
        traffic = target["B"] * target["c"] * BYTES_PER_DISTANCE / peer
        levels = everywhere - stages.get("boundary_graph", 0.0) * (1 - top) * (1 - 1 / p)
        copied = levels - stages.get("local_fw", 0.0) * (1 - imbalance / p) + traffic
        # Every rank closes every component, the upper levels below the top shared: what a run that measured
        # a link and kept its local closures did (checked_prediction); not a schedule of its own here.
        out["gpu_to_gpu_levels"] = levels
        out["gpu_to_gpu"] = copied
        if copied < out["total"]:
            out.update(total=copied, schedule="closures shared GPU to GPU")
    return out


def checked_prediction(got: dict, schedule: str) -> tuple[str, float]:
    """``(schedule, predicted seconds)`` to check a multi-rank run against: the schedule it ran (its
    ``local_closures``), its upper levels shared GPU to GPU where it measured a link (``gpu_to_gpu`` in
    ``got``, from :func:`predict`), whether its local closures travelled or every rank made them."""
    if "gpu_to_gpu" in got:
        if schedule.startswith("every rank"):
            return f"{schedule}, upper levels GPU to GPU", got["gpu_to_gpu_levels"]
        return f"{schedule}, GPU to GPU", got["gpu_to_gpu"]
    return schedule, got["close_share"] if "share" in schedule and "close_share" in got else got["close_everywhere"]


def stage_misses(stages: dict, report: dict, imbalance: float, startup: float, count: int = 3) -> list:
    """The ``count`` stages (the process start and the seconds outside any stage included) that the
    prediction of ``report`` missed most: ``(stage, measured - predicted seconds)``."""
    p = report["ranks"]
    measured = dict(report["stages"], other=report["total_seconds"] - sum(report["stages"].values()),
                    startup=report.get("startup_seconds") or 0.0)
    predicted = {name: seconds * (imbalance / p if name in DIVIDED else 1.0) for name, seconds in stages.items()}
    misses = {name: measured.get(name, 0.0) - predicted.get(name, 0.0) for name in set(measured) | set(predicted)
              if name not in ("share_rows", "startup")}
    misses["startup"] = measured["startup"] - startup  # the reference's process start (and MPI's) is predicted
    return sorted(((name, round(miss, 3)) for name, miss in misses.items()), key=lambda x: (-abs(x[1]), x[0]))[:count]


def targets(refs: dict) -> list[tuple[str, str, dict]]:
    """``(name, reference graph, spec)`` of the graphs the table predicts."""
    out = []
    for (graph, _), r in refs.items():
        if graph == "del21-unit":
            s = spec_of(r)
            out.append(("del21-unit", graph, s))
            n = 1 << 22
            k = round(n / s["c"])
            out.append(("del22-unit", graph, {"n": n, "m": 3 * n, "k": k, "c": n / k, "B": s["b"] * k, "b": s["b"]}))
        if graph == "roadFLA":
            c = spec_of(r)["c"]
            n = 4899 * 4899
            k = round(n / c)
            b = 4 * math.sqrt(n / k)
            out.append(("road-24M", graph, {"n": n, "m": 2 * n, "k": k, "c": n / k, "B": b * k, "b": b}))
    return sorted({(a, b, json.dumps(c, sort_keys=True)) for a, b, c in out})


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Predict fastapsp solve times on 1-64 GPUs from stage seconds.")
    parser.add_argument("--reports", nargs="*", help="solve reports (default: benchmarks/results/scaling/inputs)")
    parser.add_argument("--family-exponent", type=float,
                        help="boundary_graph ~ B^e (default: the cost model's upper levels)")
    parser.add_argument("--peer-rate", type=float, metavar="BYTES_PER_S",
                        help="GPU-to-GPU copy rate of one node's ranks (default: the reports' peer_bytes_per_second)")
    parser.add_argument("--mpi-start", type=float, metavar="SECONDS",
                        help="what MPI's start adds to a process's start on more than one rank (default: from the "
                             "inputs' multi-rank runs)")
    parser.add_argument("--json", metavar="FILE", help="also write the tables as JSON")
    args = parser.parse_args(argv)
    reports = load(args.reports or sorted(glob.glob(os.path.join(INPUTS, "*.json"))))
    refs = references(reports)
    if not refs:
        print("scaling_model: no one-GPU report among the inputs", file=sys.stderr)
        return 1
    exponent = args.family_exponent
    rate = share_rate(reports)
    peer = args.peer_rate or peer_rate(reports)
    mpi = mpi_start(reports, refs) if args.mpi_start is None else args.mpi_start
    law = "the cost model's upper levels" if exponent is None else f"B^{exponent:.2f}"
    print(f"boundary_graph ~ {law}; shared rows travel at "
          f"{'unmeasured' if rate is None else f'{rate / 1e9:.2f} GB/s'} through the host, "
          f"{'unmeasured' if peer is None else f'{peer / 1e9:.2f} GB/s'} GPU to GPU; "
          f"MPI's start adds {mpi:.2f} s to a process's start")
    table, checks = [], []
    print("\npredictions (seconds)")
    print(f"{'graph':<11} {'device':<22} " + " ".join(f"{p:>9}" for p in GPUS) + "  largest stage at 64, schedule")
    for name, ref_graph, spec_text in targets(refs):
        spec = json.loads(spec_text)
        for (graph, device), ref in sorted(refs.items()):
            if graph != ref_graph:
                continue
            stages = scaled_stages(ref, spec, exponent)
            rows = [predict(stages, spec, p, rate, ref.get("startup_seconds") or 0.0, peer, top_share(ref), mpi)
                    for p in GPUS]
            last = rows[-1]
            shares = {name_: seconds * (last["imbalance"] / last["p"] if name_ in DIVIDED else 1.0)
                      for name_, seconds in stages.items()}
            top = max(shares, key=shares.get)
            table.append({"graph": name, "device": device, "reference": ref["_path"], "spec": spec, "rows": rows,
                          "stages_one_gpu": stages})
            print(f"{name:<11} {device:<22} " + " ".join(f"{r['total']:>9.1f}" for r in rows)
                  + f"  {top} {shares[top]:.1f} s, {last['schedule']}")
    print("\npredicted vs measured (multi-GPU reports)")
    for r in sorted(reports, key=lambda r: (r["graph"], r["ranks"])):
        if r.get("ranks", 1) < 2:
            continue
        ref = refs.get((r["graph"], device_of(r)))
        if ref is None:
            print(f"{r['_path']}: no one-GPU report of {r['graph']} on {device_of(r)}")
            continue
        spec = spec_of(r)
        stages = scaled_stages(ref, spec, exponent)
        got = predict(stages, spec, r["ranks"], rate, ref.get("startup_seconds") or 0.0,
                      r.get("peer_bytes_per_second"), top_share(ref), mpi)
        schedule = r.get("local_closures") or ("each rank closes its share"
                                               if r["stages"].get("share_rows", 0) > 0.01 else "unknown")
        schedule, want = checked_prediction(got, schedule)
        measured = r["total_seconds"] + (r.get("startup_seconds") or 0.0)
        error = (want - measured) / measured
        misses = stage_misses(stages, r, got["imbalance"], (ref.get("startup_seconds") or 0.0) + mpi)
        checks.append({"report": r["_path"], "graph": r["graph"], "ranks": r["ranks"], "k": r["k"],
                       "schedule": schedule, "predicted": round(want, 3), "measured": round(measured, 3),
                       "relative_error": round(error, 4), "largest_misses": misses})
        print(f"{r['_path']:<62} p={r['ranks']} k={r['k']:<5} predicted {want:7.2f} s  measured "
              f"{measured:7.2f} s  ({error:+.0%})  measured - predicted: "
              + ", ".join(f"{name} {miss:+.2f}" for name, miss in misses))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"exponent": exponent, "share_rate_bytes_per_s": rate, "peer_rate_bytes_per_s": peer,
                       "mpi_start_seconds": mpi,
                       "predictions": table,
                       "checks": checks}, fh, indent=2)
            fh.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
