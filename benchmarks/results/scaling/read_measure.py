#!/usr/bin/env python3
"""Time reading one large text graph: parsed in one process and in one worker per core, then mapped from its
binary cache; under mpiexec, one reader per node against every rank reading.  Writes one JSON object.

    python benchmarks/results/scaling/read_measure.py GRAPH.mtx --repeats 5 -o read.json
    mpiexec -n 2 python benchmarks/results/scaling/read_measure.py GRAPH.mtx --mpi -o read-mpi2.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import time

import numpy as np

import fastapsp.io as io
import fastapsp.io._common as common
import fastapsp.io.nodes as nodes
from fastapsp.io.cache import cache_folder
from fastapsp.io.parallel import available_cores, parse_parallel


def _clock(fn, comm=None):
    if comm is not None:
        comm.Barrier()
    t = time.perf_counter()
    out = fn()
    if comm is not None:
        comm.Barrier()
    return time.perf_counter() - t, out


def _commit():
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()
    except OSError:
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("graph")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--mpi", action="store_true", help="run under mpiexec: per-node reader vs every rank")
    parser.add_argument("-o", "--output")
    args = parser.parse_args()
    folder = cache_folder(args.graph, io.detect_format(args.graph), False, "auto")
    comm = None
    if args.mpi:
        from mpi4py import MPI

        comm = MPI.COMM_WORLD
    rank = 0 if comm is None else comm.rank
    times: dict = {}

    def add(key, seconds):
        times.setdefault(key, []).append(round(seconds, 4))

    def drop_cache():
        if rank == 0 and folder.exists():
            shutil.rmtree(folder)
        if comm is not None:
            comm.Barrier()

    graph = None
    for _ in range(args.repeats):
        drop_cache()
        if comm is None:
            common.parse_parallel = lambda *a, **k: None
            add("text_one_process", _clock(lambda: io.read_graph(args.graph))[0])
            common.parse_parallel = parse_parallel
            add("text_workers", _clock(lambda: io.read_graph(args.graph))[0])
            add("text_workers_and_cache_write", _clock(lambda: io.read_graph(args.graph, cache="auto"))[0])
            seconds, graph = _clock(lambda: io.read_graph(args.graph, cache="auto"))
            add("cache_map", seconds)
        else:
            real = nodes.split_nodes
            nodes.split_nodes = lambda c: (None, c)  # every rank a reader: parses a share, as before
            add("text_every_rank", _clock(lambda: io.read_graph(args.graph, comm=comm), comm)[0])
            nodes.split_nodes = real
            add("text_reader_per_node", _clock(lambda: io.read_graph(args.graph, comm=comm), comm)[0])
            io.read_graph(args.graph, comm=comm, cache="auto")
            nodes.split_nodes = lambda c: (None, c)
            add("cache_map_every_rank", _clock(lambda: io.read_graph(args.graph, comm=comm, cache="auto"), comm)[0])
            nodes.split_nodes = real
            seconds, graph = _clock(lambda: io.read_graph(args.graph, comm=comm, cache="auto"), comm)
            add("cache_map_reader_per_node", seconds)
    drop_cache()
    if rank != 0:
        return
    record = {
        "graph": os.path.basename(args.graph), "bytes": os.path.getsize(args.graph), "n": graph.n, "arcs": graph.m,
        "weights": "real" if not np.all(graph.weights == np.round(graph.weights)) else "whole",
        "ranks": 1 if comm is None else comm.size, "cores": available_cores(), "repeats": args.repeats,
        "seconds": times, "best": {k: min(v) for k, v in times.items()},
        "host": platform.node(), "cpu_count": os.cpu_count(), "load_average_1min": os.getloadavg()[0],
        "numpy": np.__version__, "commit": _commit(),
    }
    text = json.dumps(record, indent=2)
    print(text)
    if args.output:
        with open(args.output, "w") as fh:
            fh.write(text + "\n")


if __name__ == "__main__":
    main()
