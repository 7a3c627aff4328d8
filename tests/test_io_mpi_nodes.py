"""One reader per node under a real launcher: ``mpiexec -n 4``, as one node and as two.

MPICH can be told to see the ranks of one host as several nodes
(``MPIR_CVAR_NUM_CLIQUES=2``: ranks 0, 2 on one, 1, 3 on the other, which
``Split_type(COMM_TYPE_SHARED)`` then reports), so the path of several nodes
(readers that share the lines across nodes, then send to their node) runs
here too.  Other MPI libraries ignore the variable and run one node.
"""

import json
import subprocess
import sys

import numpy as np
import pytest

from cli_util import DATA, cli_env, find_mpiexec, run_cli
from test_cli import BAD_INPUTS

pytestmark = [
    pytest.mark.mpi,
    pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec (install the 'mpi' extra)"),
]

TIMEOUT = 120

# Each rank reads the graph twice (the second read maps the cache the first wrote) and says what it got.
SCRIPT = r"""
import json, sys
from mpi4py import MPI
import numpy as np
import fastapsp.io as io
import fastapsp.io.cache as cache_module
from fastapsp.io.nodes import split_nodes
from fastapsp.io.parallel import available_cores

cache_module.CACHE_FROM_BYTES = 0
texts = []
real = io._read_text
io._read_text = lambda path, where: (texts.append(1), real(path, where))[1]
comm = MPI.COMM_WORLD
node, readers = split_nodes(comm)
out = {"rank": comm.rank, "node_size": None if node is None else node.size, "reader": readers is not None,
       "mpich": "MPICH" in MPI.Get_library_version(), "cores": available_cores()}
for name in ("first", "second"):
    texts.clear()
    g = io.read_graph(sys.argv[1], comm=comm, cache=sys.argv[2])
    out[name] = {"texts": len(texts), "mapped": not g.indices.flags.writeable,
                 "graph": [g.n, g.m, g.directed, g.name, g.checksum()]}
with open(f"{sys.argv[3]}/rank{comm.rank}.json", "w") as fh:
    json.dump(out, fh)
"""


def _run_script(tmp_path, graph, cache, env_extra, size):
    script = tmp_path / "read.py"
    script.write_text(SCRIPT)
    env = cli_env()
    env.update(env_extra)
    proc = subprocess.run([find_mpiexec(), "-n", str(size), sys.executable, str(script), str(graph), cache, str(tmp_path)],
                          capture_output=True, text=True, timeout=TIMEOUT, env=env)
    assert proc.returncode == 0, proc.stderr
    return [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(size)]


@pytest.mark.parametrize("size, cliques", [(2, "1"), (4, "1"), (4, "2")])
def test_readers_per_node_and_the_cache(tmp_path, size, cliques):
    import gzip

    graph = tmp_path / "minnesota.mtx"
    graph.write_bytes(gzip.decompress((DATA / "minnesota.mtx.gz").read_bytes()))
    from fastapsp.io import read_graph

    alone = read_graph(graph)
    want = [alone.n, alone.m, alone.directed, alone.name, alone.checksum()]
    ranks = _run_script(tmp_path, graph, "auto", {"MPIR_CVAR_NUM_CLIQUES": cliques}, size)
    if ranks[0]["mpich"]:
        per_node = size // int(cliques)
        alone = ranks[0]["cores"] >= per_node  # one reader per node when it has a core per rank of its node
        assert sum(r["reader"] for r in ranks) == (int(cliques) if alone else size)
        assert all(r["node_size"] == (per_node if alone else None) for r in ranks)
    for r in ranks:
        assert r["first"]["graph"] == want and r["second"]["graph"] == want
        # First read: only the readers read the text; second: everyone maps the cache rank 0 wrote.
        assert r["first"]["texts"] == (1 if r["reader"] else 0) and not r["first"]["mapped"]
        assert r["second"]["texts"] == 0 and r["second"]["mapped"]


@pytest.mark.parametrize("name", ["garbled.mtx", "range.mtx", "many.mtx"])
def test_bad_input_on_two_nodes_fails_once_without_hanging(tmp_path, monkeypatch, name):
    text, fragment = BAD_INPUTS[name]
    path = tmp_path / name
    path.write_text(text)
    monkeypatch.setenv("MPIR_CVAR_NUM_CLIQUES", "2")
    proc = run_cli("solve", path, "-k", 1, ranks=4, timeout=TIMEOUT)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if "fastapsp: error" in line]
    assert len(errors) == 1 and fragment in errors[0], proc.stderr


def test_solve_on_two_nodes_matches_one_process(tmp_path, monkeypatch):
    one, four = tmp_path / "one.npy", tmp_path / "four.npy"
    assert run_cli("solve", DATA / "minnesota.mtx.gz", "-k", 8, "--backend", "numpy", "--output", one).returncode == 0
    monkeypatch.setenv("MPIR_CVAR_NUM_CLIQUES", "2")
    proc = run_cli("solve", DATA / "minnesota.mtx.gz", "-k", 8, "--backend", "numpy", "--output", four,
                   ranks=4, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(four), np.load(one))
