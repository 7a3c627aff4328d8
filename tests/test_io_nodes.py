"""One reader per node (fastapsp/io/nodes.py): only the node's first rank reads the file, every rank gets the
same graph or the same error, none hangs.

The ranks are threads (tests/test_io_share.py) placed on made-up nodes: the
split into nodes is replaced by one that follows a list ``node of rank``.
tests/test_io_mpi_nodes.py runs the real split under mpiexec.
"""

import threading

import numpy as np
import pytest

import fastapsp.io as io
import fastapsp.io.cache as cache_module
import fastapsp.io.nodes as nodes
from fastapsp.errors import GraphFormatError, RankError
from fastapsp.io import read_graph

from test_cli import BAD_INPUTS
from test_io_share import WAIT, ThreadComm, _Group, _lines, _mtx, _same_graph, run_ranks


class NodeComm(ThreadComm):
    """A thread rank with the collectives fastapsp.io.nodes uses besides those of share.py."""

    def bcast(self, obj, root=0):
        g = self.group
        if self.rank == root:
            g.slots[root] = obj
        g.barrier.wait()
        out = g.slots[root]
        g.barrier.wait()
        return out

    def Free(self):
        self.group.freed += 1


class _NodeGroup(_Group):
    def __init__(self, size):
        super().__init__(size)
        self.freed = 0


@pytest.fixture
def on_nodes(monkeypatch):
    """``place(node_of)``: ranks on the given nodes; returns the groups (to check they were freed)."""
    def place(node_of):
        size = len(node_of)
        members = {}
        for rank, node in enumerate(node_of):
            members.setdefault(node, []).append(rank)
        node_groups = {node: _NodeGroup(len(ranks)) for node, ranks in members.items()}
        readers = _NodeGroup(len(members))
        first = sorted(ranks[0] for ranks in members.values())

        def split(comm):
            node = node_of[comm.rank]
            local = members[node].index(comm.rank)
            reader = NodeComm(readers, first.index(comm.rank)) if local == 0 else None
            return NodeComm(node_groups[node], local), reader

        monkeypatch.setattr(nodes, "split_nodes", split)
        world = _NodeGroup(size)
        return world, [*node_groups.values(), readers]

    return place


def _run(world, fn):
    """``fn(comm)`` on the thread ranks of ``world``: (result, exception) per rank, in rank order."""
    out = [None] * world.size

    def body(rank):
        try:
            out[rank] = (fn(NodeComm(world, rank)), None)
        except Exception as exc:  # noqa: BLE001 - compared by the test
            out[rank] = (None, exc)

    threads = [threading.Thread(target=body, args=(r,)) for r in range(world.size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(2 * WAIT)
    assert not any(t.is_alive() for t in threads), "a rank hangs"
    for _, exc in out:
        assert not isinstance(exc, threading.BrokenBarrierError), "the ranks' collectives did not match"
    return out


@pytest.fixture
def reads(monkeypatch):
    """The file names that were read as text, one entry per read."""
    seen = []
    real = io._read_text

    def counted(path, where):
        seen.append(path.name)
        return real(path, where)

    monkeypatch.setattr(io, "_read_text", counted)
    return seen


LAYOUTS = [[0, 0], [0, 0, 0], [0, 1], [0, 0, 1, 1, 1], [0, 1, 0, 1], [2, 0, 1, 1, 0, 2, 2]]


@pytest.mark.parametrize("node_of", LAYOUTS)
def test_one_read_per_node_and_the_same_graph_everywhere(on_nodes, reads, tmp_path, node_of):
    path = _mtx(tmp_path, _lines(1), size="40 40 200")
    alone = read_graph(path)
    reads.clear()
    world, groups = on_nodes(node_of)
    results = _run(world, lambda comm: read_graph(path, comm=comm))
    for graph, exc in results:
        assert exc is None, repr(exc)
        _same_graph(graph, alone)
    assert len(reads) == len(set(node_of))
    assert all(group.freed == group.size for group in groups)


@pytest.mark.parametrize("node_of", [[0, 0, 0], [0, 1, 1, 0]])
def test_formats_read_whole_by_each_reader(on_nodes, reads, tmp_path, node_of):
    path = tmp_path / "g.graph"
    path.write_text("3 2\n2\n1 3\n2\n")
    alone = read_graph(path)
    reads.clear()
    world, _ = on_nodes(node_of)
    for graph, exc in _run(world, lambda comm: read_graph(path, comm=comm)):
        assert exc is None, repr(exc)
        _same_graph(graph, alone)
    assert len(reads) == len(set(node_of))


@pytest.mark.parametrize("node_of", [[0, 0, 0], [0, 1, 1, 0, 1]])
def test_cache_written_once_then_mapped_by_every_rank(on_nodes, reads, monkeypatch, tmp_path, node_of):
    monkeypatch.setattr(cache_module, "CACHE_FROM_BYTES", 0)
    path = _mtx(tmp_path, _lines(2), size="40 40 200")
    alone = read_graph(path)
    world, _ = on_nodes(node_of)
    first = _run(world, lambda comm: read_graph(path, comm=comm, cache="auto"))
    assert all(exc is None for _, exc in first)
    assert path.with_name("g.mtx.mtx.fastapsp-csr").is_dir()
    reads.clear()
    world, _ = on_nodes(node_of)
    second = _run(world, lambda comm: read_graph(path, comm=comm, cache="auto"))
    assert reads == []
    for graph, exc in second:
        assert exc is None, repr(exc)
        assert not graph.indices.flags.writeable
        _same_graph(graph, alone)


def test_a_cache_only_the_reader_finds_damaged_is_dropped_everywhere(on_nodes, reads, monkeypatch, tmp_path):
    """The node's other ranks read the cache at once, unchecked; when the reader's check finds it damaged
    (a weight changed, the CSR still sound) they drop what they read and take the reader's parsed arrays."""
    monkeypatch.setattr(cache_module, "CACHE_FROM_BYTES", 0)
    path = _mtx(tmp_path, _lines(6), size="40 40 200")
    alone = read_graph(path, cache="auto")
    weights = path.with_name("g.mtx.mtx.fastapsp-csr") / "weights.npy"
    damaged = np.load(weights)
    damaged[0] += 1.0
    np.save(weights, damaged)
    reads.clear()
    guessed = []
    real = io.load_cached
    monkeypatch.setattr(io, "load_cached", lambda *a, verify=True: guessed.append(verify) or real(*a, verify=verify))
    world, _ = on_nodes([0, 0, 0, 1, 1])
    results = _run(world, lambda comm: read_graph(path, comm=comm, cache="auto"))
    assert guessed.count(False) == 3  # the other ranks of both nodes read the damaged cache at once
    assert len(reads) == 2  # and both readers, finding it damaged, parsed the text
    for graph, exc in results:
        assert exc is None, repr(exc)
        _same_graph(graph, alone)


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_bad_inputs_same_error_on_every_rank(on_nodes, tmp_path, name):
    path = tmp_path / name
    path.write_text(BAD_INPUTS[name][0])
    with pytest.raises(Exception) as alone:
        read_graph(path)
    world, _ = on_nodes([0, 1, 1, 0, 1])
    for _, exc in _run(world, lambda comm: read_graph(path, comm=comm)):
        assert type(exc) is type(alone.value) or isinstance(exc, (GraphFormatError, RankError)), repr(exc)
        assert str(alone.value) in str(exc)
        if isinstance(alone.value, GraphFormatError):
            assert isinstance(exc, GraphFormatError) and str(exc) == str(alone.value)


def test_a_rank_that_cannot_map_the_cache_ends_every_rank(on_nodes, monkeypatch, tmp_path):
    monkeypatch.setattr(cache_module, "CACHE_FROM_BYTES", 0)
    path = _mtx(tmp_path, _lines(3), size="40 40 200")
    read_graph(path, cache="auto")
    real = io.load_cached
    monkeypatch.setattr(io, "load_cached", lambda *a, verify=True: real(*a) if verify else None)
    world, _ = on_nodes([0, 0, 1, 1])
    results = _run(world, lambda comm: read_graph(path, comm=comm, cache="auto"))
    assert isinstance(results[1][1], OSError) and "no longer matches" in str(results[1][1])
    for rank in (0, 2, 3):
        exc = results[rank][1]
        assert isinstance(exc, RankError) and str(exc).startswith("rank 1 failed during reading the graph")


def test_a_reader_that_cannot_open_the_file_ends_every_rank(on_nodes, tmp_path):
    good = _mtx(tmp_path, _lines(4))
    world, _ = on_nodes([0, 1, 0, 1])  # rank 1 is the reader of node 1
    results = _run(world, lambda comm: read_graph(good if comm.rank != 1 else tmp_path / "missing.mtx", comm=comm))
    assert isinstance(results[1][1], FileNotFoundError)
    for rank in (0, 2, 3):
        exc = results[rank][1]
        assert isinstance(exc, RankError) and str(exc).startswith("rank 1 failed") and "missing.mtx" in str(exc)


def test_every_rank_reads_where_nodes_are_unknown(reads, tmp_path):
    path = _mtx(tmp_path, _lines(5))
    results = run_ranks(3, lambda comm: read_graph(path, comm=comm))  # ThreadComm: no Split_type
    assert all(exc is None for _, exc in results) and len(reads) == 3
