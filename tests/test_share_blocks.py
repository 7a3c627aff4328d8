"""The components' rows shared among MPI ranks (fastapsp.distributed.share_blocks): through the host by one
Allgatherv, and by each rank's one flat buffer read whole by the others (``on_device``, as the ranks of one
node copy GPU to GPU; here ``peers.share_on_device`` stood in on the host).  Every rank ends with every
component's ``L_p[:nb_p]``, the same as one process's closures.  This file is also the per-rank program
(``python test_share_blocks.py OUT``).
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


def _rank_program(out: str) -> None:
    from mpi4py import MPI

    from conftest import share_on_host
    from fastapsp import peers
    from fastapsp.distributed import share_blocks
    from fastapsp.io import read_graph
    from fastapsp.partition import partition_graph
    from fastapsp.schedule import component_costs, schedule_components
    from fastapsp.stages.boundary_graph import close_components, pack_boundary_rows

    comm = MPI.COMM_WORLD
    graph = read_graph(DATA / "minnesota.mtx.gz")
    part = partition_graph(graph, 9, "metis", seed=1)
    spread = [list(s) for s in schedule_components(component_costs(part, graph.n, graph.m), comm.size)]
    everything = close_components(graph.indptr, graph.indices, graph.weights, part, range(part.k), dtype=np.float32)
    want = pack_boundary_rows(everything, part)
    mine = {p: want[p].copy() for p in spread[comm.rank]}
    calls = []

    def counting(comm_, pieces, segments, counts, dtype):
        calls.append(len(segments))
        return share_on_host(comm_, pieces, segments, counts, dtype)

    peers.share_on_device = counting
    results = {}
    for on_device in (False, True):
        got = share_blocks(mine, part, spread, comm=comm, xp=np, dtype=np.float32, on_device=on_device)
        results[on_device] = sorted(got) == sorted(want) and all(
            got[p].shape == want[p].shape and np.array_equal(got[p], want[p]) for p in want)
    everyone = comm.gather({"host": results[False], "buffers": results[True], "calls": calls})
    if comm.rank == 0:
        Path(out).write_text(json.dumps(everyone))


@pytest.mark.mpi
@pytest.mark.parametrize("ranks", [2, 3])
@pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec (install the 'mpi' extra)")
def test_every_rank_gets_every_components_rows_both_ways(tmp_path, ranks):
    pytest.importorskip("pymetis")
    out = tmp_path / "result.json"
    cmd = [find_mpiexec(), "-n", str(ranks), sys.executable, str(HERE), str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=cli_env())
    assert proc.returncode == 0, proc.stderr
    everyone = json.loads(out.read_text())
    assert len(everyone) == ranks
    assert all(rank["host"] and rank["buffers"] for rank in everyone), everyone
    assert all(rank["calls"] == [ranks] for rank in everyone), everyone  # the buffers' way taken, once


if __name__ == "__main__":
    _rank_program(sys.argv[1])
