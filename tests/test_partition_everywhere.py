"""Rank 0's partition on every rank (``fastapsp.distributed.partition_everywhere``), under a real launcher.

Rank 0 partitions and broadcasts the partition whole; every other rank must end with the very same
arrays and figures, and a rank holding another graph must fail with one clear error on every rank,
never hang.  This file is also the per-rank program (``python test_partition_everywhere.py MODE OUT``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cli_util import DATA, cli_env, find_mpiexec  # noqa: E402

HERE = Path(__file__).resolve()

pytestmark = [
    pytest.mark.mpi,
    pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec (install the 'mpi' extra)"),
]


def _rank_program(mode: str, out: str) -> None:
    from mpi4py import MPI

    from fastapsp.distributed import partition_everywhere
    from fastapsp.graph import Graph
    from fastapsp.io import read_graph
    from fastapsp.options import SolveOptions
    from fastapsp.partition import make_partition

    import fastapsp.distributed as distributed

    comm = MPI.COMM_WORLD
    graph = read_graph(DATA / "minnesota.mtx.gz")
    if mode == "nomem" and comm.rank == comm.size - 1:  # the last rank finds no room for the arrays
        class NoRoom:
            def __getattr__(self, name):
                return getattr(np, name)

            def empty(self, *args, **kwargs):
                raise MemoryError("no room for the partition's arrays")

        distributed.np = NoRoom()
    if mode == "other" and comm.rank == comm.size - 1:  # the last rank holds another graph of the same size
        weights = graph.weights.copy()
        indices = graph.indices.copy()
        indices[[0, 1]] = indices[[1, 0]]
        graph = Graph(graph.indptr, indices, weights, directed=graph.directed, name=graph.name)
    if mode == "piecefail" and comm.rank == comm.size - 1:  # the last rank's partitioner fails on its piece
        def failing(*args, **kwargs):
            raise RuntimeError("the partitioner failed on this piece")

        distributed.partition_labels = failing
    pieces = "on" if mode.startswith("piece") else "off"
    opts = SolveOptions(graph="minnesota", k=7, partitioner="metis", seed=3, parallel_partition=pieces)
    try:
        part = partition_everywhere(graph, opts, 7, "numpy", comm=comm)
    except Exception as exc:  # noqa: BLE001 - every rank's error, gathered by rank 0
        answers = comm.gather(f"{type(exc).__name__}: {exc}")
        if comm.rank == 0:
            Path(out).write_text(json.dumps({"errors": answers}))
        return
    again = make_partition(graph, part.labels, part.k, method=part.method, seed=part.seed,
                           imbalance=part.imbalance, seconds=part.seconds, details=part.details)
    mine = {
        "labels": part.labels.tobytes().hex(), "boundary": part.boundary.tobytes().hex(),
        "components": [part.component(p)[0].tolist() for p in range(part.k)],
        "sizes": part.sizes.tolist(), "metrics": part.metrics(),
        "dtypes": [str(part.labels.dtype), str(part.boundary.dtype)],
        # what the labels give on this rank's own graph: the broadcast partition is this graph's
        "as_made_here": bool(np.array_equal(again.boundary, part.boundary) and again.edge_cut == part.edge_cut
                             and all(np.array_equal(again.component(p)[0], part.component(p)[0])
                                     for p in range(part.k))),
    }
    if mode == "pieces":  # this rank's own cut, made here: its piece's vertices hold its share of components
        from fastapsp.partition.pieces import cut_pieces

        indptr, indices = graph.undirected_adjacency()
        ((_, vertices, share),) = cut_pieces(indptr, indices, comm.size, 7, only=comm.rank)
        mine["own_piece"] = [int(vertices.size), int(share), np.unique(part.labels[vertices]).size]
    everyone = comm.gather(mine)
    if comm.rank == 0:
        Path(out).write_text(json.dumps({"ranks": everyone}))


def _launch(ranks, mode, out):
    cmd = [find_mpiexec(), "-n", str(ranks), sys.executable, str(HERE), mode, str(out)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=cli_env())


@pytest.mark.parametrize("ranks", [2, 3])
def test_every_rank_holds_rank_zeros_partition(tmp_path, ranks):
    out = tmp_path / "result.json"
    proc = _launch(ranks, "same", out)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())["ranks"]
    assert len(result) == ranks
    assert all(r == result[0] for r in result[1:]), "a rank's partition differs from rank 0's"
    assert result[0]["as_made_here"] and result[0]["dtypes"] == ["int32", "bool"]
    assert sum(result[0]["sizes"]) == 2642 and result[0]["metrics"]["k"] == 7


@pytest.mark.parametrize("ranks", [2, 3])
def test_ranks_partitioning_a_piece_each_end_with_one_partition(tmp_path, ranks):
    """--parallel-partition on: every rank cuts out its piece and partitions it; rank 0 puts the labels
    together and every rank holds the same partition, whose components never straddle two pieces."""
    out = tmp_path / "result.json"
    proc = _launch(ranks, "pieces", out)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())["ranks"]
    own = [r.pop("own_piece") for r in result]
    assert all(r == result[0] for r in result[1:]), "a rank's partition differs from rank 0's"
    assert result[0]["as_made_here"] and sum(result[0]["sizes"]) == 2642 and result[0]["metrics"]["k"] == 7
    pieces = result[0]["metrics"]["pieces"]
    assert pieces["ranks"] == ranks
    assert pieces["vertices"] == [v for v, _, _ in own] and sum(pieces["vertices"]) == 2642
    assert pieces["components"] == [c for _, c, _ in own] and sum(pieces["components"]) == 7
    assert all(used <= share for _, share, used in own)  # a piece's vertices lie in its own components
    assert sum(used for _, _, used in own) == sum(1 for size in result[0]["sizes"] if size)


def test_a_rank_whose_piece_fails_fails_every_rank(tmp_path):
    out = tmp_path / "result.json"
    proc = _launch(3, "piecefail", out)
    assert proc.returncode == 0, proc.stderr
    errors = json.loads(out.read_text())["errors"]
    assert errors[2] == "RuntimeError: the partitioner failed on this piece", errors
    assert all(e.startswith("RankError") and "rank 2 failed during partitioning a piece" in e
               for e in errors[:2]), errors


def test_a_rank_with_another_graph_fails_on_every_rank(tmp_path):
    out = tmp_path / "result.json"
    proc = _launch(3, "other", out)
    assert proc.returncode == 0, proc.stderr
    errors = json.loads(out.read_text())["errors"]
    assert len(errors) == 3 and all("different graphs" in e and "same on every node" in e for e in errors), errors


def test_a_rank_without_room_for_the_partition_fails_every_rank(tmp_path):
    """No rank waits in a broadcast for a rank that could not make room for the arrays."""
    out = tmp_path / "result.json"
    proc = _launch(3, "nomem", out)
    assert proc.returncode == 0, proc.stderr
    errors = json.loads(out.read_text())["errors"]
    assert errors[2].startswith("MemoryError") and "no room" in errors[2], errors
    assert all(e.startswith("RankError") and "rank 2 failed during receiving the partition" in e
               for e in errors[:2]), errors


if __name__ == "__main__":
    _rank_program(sys.argv[1], sys.argv[2])
