"""Several ranks reading one file together (fastapsp/io/share.py): the same graph, the same errors, no hang.

The ranks here are threads of this process with a communicator of their own
(allgather and Bcast, as mpi4py's), so every split of the lines can be tried
in a second; tests/test_mpi.py runs real launchers.
"""

import gzip
import threading

import numpy as np
import pytest

from fastapsp.errors import GraphFormatError, RankError
from fastapsp.io import read_graph
from fastapsp.io.share import Shared

from cli_util import DATA
from test_cli import BAD_INPUTS

MINNESOTA = DATA / "minnesota.mtx.gz"
WAIT = 30  # seconds a rank may wait for the others before the test calls it a hang


class _Group:
    def __init__(self, size):
        self.size = size
        self.slots = [None] * size
        self.barrier = threading.Barrier(size, timeout=WAIT)


class ThreadComm:
    """Rank ``rank`` of a group of threads: the collectives fastapsp.io.share uses."""

    def __init__(self, group, rank):
        self.group, self.rank, self.size = group, rank, group.size

    def allgather(self, obj):
        g = self.group
        g.slots[self.rank] = obj
        g.barrier.wait()
        out = list(g.slots)
        g.barrier.wait()
        return out

    def Bcast(self, buf, root=0):
        g = self.group
        if self.rank == root:
            g.slots[root] = np.array(buf)
        g.barrier.wait()
        if self.rank != root:
            buf[...] = g.slots[root]
        g.barrier.wait()


def run_ranks(size, fn):
    """``fn(comm)`` on ``size`` thread ranks: a list of (result, exception) in rank order."""
    group = _Group(size)
    out = [None] * size

    def body(rank):
        try:
            out[rank] = (fn(ThreadComm(group, rank)), None)
        except Exception as exc:  # noqa: BLE001 - compared by the test
            out[rank] = (None, exc)

    threads = [threading.Thread(target=body, args=(r,)) for r in range(size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(2 * WAIT)
    assert not any(t.is_alive() for t in threads), "a rank hangs"
    for _, exc in out:  # a broken barrier means some rank left a collective the others were in
        assert not isinstance(exc, threading.BrokenBarrierError), "the ranks' collectives did not match"
    return out


def _same_graph(a, b):
    assert (a.n, a.directed, a.name) == (b.n, b.directed, b.name)
    np.testing.assert_array_equal(a.indptr, b.indptr)
    np.testing.assert_array_equal(a.indices, b.indices)
    np.testing.assert_array_equal(a.weights, b.weights)


def _read_alone(path, **kw):
    try:
        return read_graph(path, **kw), None
    except Exception as exc:  # noqa: BLE001
        return None, exc


def _check_like_one_process(path, sizes=(2, 3, 4, 7), **kw):
    """Every split gives what one process gives: the same graph, or the same error on every rank."""
    alone, error = _read_alone(path, **kw)
    for size in sizes:
        results = run_ranks(size, lambda comm: read_graph(path, comm=comm, **kw))
        for rank, (graph, exc) in enumerate(results):
            if error is None:
                assert exc is None, f"{size} ranks, rank {rank}: {exc!r}"
                _same_graph(graph, alone)
            else:
                assert isinstance(exc, type(error)) or isinstance(exc, RankError), (size, rank, exc)
                assert str(error) in str(exc), (size, rank, str(exc), str(error))


def _mtx(tmp_path, lines, *, head="%%MatrixMarket matrix coordinate real general", size=None, name="g.mtx"):
    n = 40
    text = head + "\n" + (size or f"{n} {n} {len(lines)}") + "\n" + "".join(line + "\n" for line in lines)
    path = tmp_path / name
    path.write_text(text)
    return path


def _lines(seed, count=200, n=40):
    rng = np.random.default_rng(seed)
    return [f"{rng.integers(1, n + 1)} {rng.integers(1, n + 1)} {rng.integers(0, 9)}" for _ in range(count)]


def test_shipped_graph_is_the_same_on_every_split():
    _check_like_one_process(MINNESOTA)


@pytest.mark.parametrize("head", ["%%MatrixMarket matrix coordinate real general",
                                  "%%MatrixMarket matrix coordinate real symmetric",
                                  "%%MatrixMarket matrix coordinate integer general"])
def test_weighted_files_with_comments_and_blank_lines(tmp_path, head):
    lines = _lines(1)
    lines[10] = "% a comment in the body"
    lines[57] = ""
    lines[120] = "   "
    _check_like_one_process(_mtx(tmp_path, lines, head=head, size="40 40 197"))


def test_fastapsp_and_dimacs_layouts(tmp_path):
    fast = tmp_path / "g.mtx"
    fast.write_text("40 40 200\n" + "".join(line + "\n" for line in _lines(2)))
    _check_like_one_process(fast)
    dimacs = tmp_path / "g.gr"
    dimacs.write_text("c made here\np sp 40 200\n" + "".join(f"a {line}\n" for line in _lines(3)))
    _check_like_one_process(dimacs)


def test_gzip_without_last_newline_and_more_ranks_than_lines(tmp_path):
    path = tmp_path / "g.mtx.gz"
    path.write_bytes(gzip.compress(b"%%MatrixMarket matrix coordinate pattern symmetric\n4 4 3\n1 2\n2 3\n3 4"))
    _check_like_one_process(path, sizes=(2, 3, 5, 9))


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_bad_inputs_fail_alike(tmp_path, name):
    path = tmp_path / name
    path.write_text(BAD_INPUTS[name][0])
    _check_like_one_process(path)


BREAKS = ["x", "-3", "0", "41", "1.5", "nan", "inf", "1 2 3 4", "7", ""]


def _break_some(lines, rng) -> None:
    """One to three of ``lines`` broken in place: a word of each replaced by one of ``BREAKS``."""
    for _ in range(int(rng.integers(1, 4))):
        at = int(rng.integers(len(lines)))
        words = lines[at].split()
        words[int(rng.integers(3))] = BREAKS[int(rng.integers(len(BREAKS)))]
        lines[at] = " ".join(words)


@pytest.mark.parametrize("seed", range(12))
def test_broken_lines_anywhere_fail_as_in_one_process(tmp_path, seed):
    """Up to three lines broken at random places (in any slice): the same first problem on every rank."""
    rng = np.random.default_rng(seed)
    lines = _lines(seed)
    _break_some(lines, rng)
    count = len(lines) + int(rng.integers(-2, 3))  # sometimes a wrong entry count too
    _check_like_one_process(_mtx(tmp_path, lines, size=f"40 40 {count}"))


def test_wrong_first_line_width_in_a_later_slice(tmp_path):
    # The first lines hold no values (comments): the width comes from a line in another rank's slice.
    lines = ["% c"] * 150 + ["1 2"] + _lines(4, 50)
    _check_like_one_process(_mtx(tmp_path, lines, size="40 40 51"))


def test_a_rank_that_cannot_open_the_file_ends_every_rank(tmp_path):
    good = _mtx(tmp_path, _lines(5))
    results = run_ranks(3, lambda comm: read_graph(good if comm.rank != 1 else tmp_path / "missing.mtx", comm=comm))
    assert isinstance(results[1][1], FileNotFoundError)
    for rank in (0, 2):
        assert isinstance(results[rank][1], RankError) and "missing.mtx" in str(results[rank][1])


def test_metis_files_are_read_whole_by_every_rank(tmp_path):
    path = tmp_path / "g.graph"
    path.write_text("3 2\n2\n1 3\n2\n")
    _check_like_one_process(path, sizes=(2, 3))


def test_cut_gives_whole_lines_in_order():
    data = b"head\n" + b"".join(b"%d\n" % i for i in range(100))
    for size in (1, 2, 3, 8, 150):
        slices = [Shared(type("C", (), {"size": size, "rank": r})()).cut(data, 5, 2) for r in range(size)]
        joined = b"".join(data[s:e] for s, e, _ in slices)
        assert joined == data[5:]
        for s, e, line in slices:
            assert s == 5 or data[s - 1:s] == b"\n"
            assert line == 2 + data.count(b"\n", 5, s)
        assert slices[-1][1] is None
