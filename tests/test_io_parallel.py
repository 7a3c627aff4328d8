"""Numbers parsed by several worker processes (fastapsp/io/parallel.py): the same values, dtype and errors as
one process.

The size limits are lowered so that small files are cut into several runs; every
test compares against a read with the parallel parse switched off.
"""

import gzip

import numpy as np
import pytest

import fastapsp.io._common as common
import fastapsp.io.parallel as parallel
from fastapsp.io import read_graph
from fastapsp.io._common import _token_starts

from cli_util import DATA
from test_cli import BAD_INPUTS
from test_io_share import _break_some, _lines, _mtx


@pytest.fixture
def forced(monkeypatch):
    """Every body of two tokens or more is cut into runs for 3 workers; counts the parallel parses that
    returned values."""
    if parallel._fork_context() is None:
        pytest.skip("no fork on this platform: the parallel parse never runs")
    monkeypatch.setattr(parallel, "PARALLEL_FROM_BYTES", 0)
    monkeypatch.setattr(parallel, "_RUN_BYTES", 1)
    monkeypatch.setattr(parallel, "available_cores", lambda: 3)
    done = []
    real = parallel.parse_parallel

    def counted(*args, **kwargs):
        values = real(*args, **kwargs)
        done.append(values is not None)
        return values

    monkeypatch.setattr(common, "parse_parallel", counted)
    return done


def _serial(path, monkeypatch, **kw):
    with monkeypatch.context() as m:
        m.setattr(common, "parse_parallel", lambda *a, **k: None)
        return _outcome(path, **kw)


def _outcome(path, **kw):
    try:
        return read_graph(path, **kw), None
    except Exception as exc:  # noqa: BLE001 - compared by the test
        return None, exc


def _same_bits(a, b):
    assert (a.n, a.directed, a.name) == (b.n, b.directed, b.name)
    np.testing.assert_array_equal(a.indptr, b.indptr)
    np.testing.assert_array_equal(a.indices, b.indices)
    assert a.weights.dtype == b.weights.dtype
    np.testing.assert_array_equal(a.weights.view(np.uint8), b.weights.view(np.uint8))


def _like_serial(path, monkeypatch, **kw):
    want, error = _serial(path, monkeypatch, **kw)
    got, exc = _outcome(path, **kw)
    if error is None:
        assert exc is None, repr(exc)
        _same_bits(got, want)
    else:
        assert type(exc) is type(error) and str(exc) == str(error)
    return got


@pytest.mark.parametrize("name", ["minnesota.mtx.gz", "cal.cedge.gz"])
def test_shipped_graphs_read_the_same(forced, monkeypatch, name):
    assert _like_serial(DATA / name, monkeypatch) is not None
    assert all(forced) and forced


def _other_formats(tmp_path):
    rng = np.random.default_rng(5)
    n, m = 50, 400
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    w = rng.random(m).round(6)
    snap = tmp_path / "g.txt"
    snap.write_text("# from to weight\n" + "".join(f"{a}\t{b}\t{c}\n" for a, b, c in zip(src, dst, w)))
    dimacs = tmp_path / "g.gr"
    dimacs.write_text(f"c arcs\np sp {n} {m}\n" + "".join(f"a {a + 1} {b + 1} {int(c * 100)}\n"
                                                          for a, b, c in zip(src, dst, w)))
    lists = [[] for _ in range(n)]
    for a, b, c in zip(src, dst, w):
        if a != b:
            lists[a] += [b, c]
            lists[b] += [a, c]
    metis = tmp_path / "g.graph"
    metis.write_text(f"{n} {sum(len(x) for x in lists) // 4} 1\n"
                     + "".join(" ".join(str(int(v) + 1 if i % 2 == 0 else v) for i, v in enumerate(x)) + "\n"
                               for x in lists))
    return [snap, dimacs, metis]


def test_snap_dimacs_and_metis_read_the_same(forced, monkeypatch, tmp_path):
    for path in _other_formats(tmp_path):
        assert _like_serial(path, monkeypatch) is not None, path
    assert len(forced) == 3 and all(forced)


@pytest.mark.parametrize("seed", range(6))
def test_integer_runs_beside_real_runs_read_as_one_float_parse(forced, monkeypatch, tmp_path, seed):
    """Runs of whole numbers only and runs with reals: float64 everywhere, bit for bit (-0 included)."""
    rng = np.random.default_rng(seed)
    lines = [f"{rng.integers(1, 41)} {rng.integers(1, 41)} {rng.integers(0, 9)}" for _ in range(300)]
    for at in rng.choice(300, size=int(rng.integers(1, 4)), replace=False):
        a, b, _ = lines[at].split()
        lines[at] = f"{a} {b} {rng.choice(['0.1', '-0', '1e-300', '3.0000000000000004', '7.'])}"
    lines[int(rng.integers(300))] = "1 2 -0"
    path = _mtx(tmp_path, lines, size="40 40 300")
    _like_serial(path, monkeypatch)
    assert all(forced)


def test_whole_numbers_beyond_int64_read_as_float(forced, monkeypatch, tmp_path):
    lines = _lines(1)
    lines[150] = "3 4 99999999999999999999999"
    _like_serial(_mtx(tmp_path, lines, size="40 40 200"), monkeypatch)


def test_integer_file_stays_integer(forced, tmp_path):
    path = _mtx(tmp_path, _lines(2), head="%%MatrixMarket matrix coordinate integer general", size="40 40 200")
    body = path.read_bytes().split(b"\n", 2)[2]
    values = parallel.parse_parallel(body, _token_starts(body), cores=3)
    assert values.dtype == np.int64
    np.testing.assert_array_equal(values, np.fromstring(body, dtype=np.int64, sep=" "))


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_bad_inputs_fail_alike(forced, monkeypatch, tmp_path, name):
    path = tmp_path / name
    path.write_text(BAD_INPUTS[name][0])
    _like_serial(path, monkeypatch)


@pytest.mark.parametrize("seed", range(10))
def test_broken_lines_fail_as_in_one_process(forced, monkeypatch, tmp_path, seed):
    rng = np.random.default_rng(seed)
    lines = _lines(seed)
    _break_some(lines, rng)
    _like_serial(_mtx(tmp_path, lines, size="40 40 200"), monkeypatch)


def test_comments_blank_lines_gzip_and_no_last_newline(forced, monkeypatch, tmp_path):
    lines = _lines(3)
    lines[20] = "% a comment"
    lines[90] = "   "
    text = "%%MatrixMarket matrix coordinate real symmetric\n40 40 199\n" + "\n".join(lines)
    path = tmp_path / "g.mtx.gz"
    path.write_bytes(gzip.compress(text.encode()))
    _like_serial(path, monkeypatch)
    assert any(forced)


def test_one_core_or_a_small_body_parses_in_one_process(monkeypatch):
    body = b"1 2 3\n" * 10
    assert parallel.parse_parallel(body, _token_starts(body), cores=1) is None
    assert parallel.parse_parallel(body, _token_starts(body), cores=8) is None  # below PARALLEL_FROM_BYTES
    assert parallel.available_cores() >= 1


def test_a_worker_that_cannot_start_leaves_the_parse_to_one_process(forced, monkeypatch, tmp_path):
    started = []

    class Refused:
        def __init__(self, **kwargs):
            self.exitcode = None

        def start(self):
            if started:
                raise OSError("fork: Resource temporarily unavailable")
            started.append(self)

        def join(self):
            self.exitcode = 0

    monkeypatch.setattr(parallel, "_fork_context", lambda: type("C", (), {"Process": Refused})())
    _like_serial(_mtx(tmp_path, _lines(6), size="40 40 200"), monkeypatch)
    assert forced == [False] and len(started) == 1
