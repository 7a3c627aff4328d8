"""Hostile input: mutated graph files are either read correctly or refused with GraphFormatError.

Every reader (Matrix Market, the FastAPSP layout, METIS, SNAP, cedge, DIMACS)
gets valid files that hypothesis then damages: truncation, random bytes,
deleted, swapped or repeated fields and lines, huge, negative and overflowing
numbers, CRLF, blank lines, comments in odd places, non-UTF-8 bytes.  A case
passes when the reader returns a valid Graph or raises the project's own
GraphFormatError; any other exception, or a case running past its time limit,
fails.  Benign rewrites of a valid file (CRLF, blank lines, comments, extra
spaces, gzip) must give exactly the same graph.
"""

from __future__ import annotations

import gzip
import signal
import tracemalloc
from contextlib import contextmanager

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from fastapsp.errors import GraphFormatError  # noqa: E402
from fastapsp.graph import Graph  # noqa: E402
from fastapsp.io import read_graph  # noqa: E402

CASE_SECONDS = 20  # one case may take this long before it counts as a hang
SETTINGS = dict(max_examples=100, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

# A small valid file of every format, with its comment marker and extension.
VALID = {
    "mtx": ("g.mtx", b"%", b"%%MatrixMarket matrix coordinate real general\n% comment\n4 4 5\n"
            b"1 2 3.5\n2 3 1\n3 1 0\n4 2 2e1\n1 4 7\n"),
    "mtx-symmetric": ("s.mtx", b"%", b"%%MatrixMarket matrix coordinate integer symmetric\n4 4 3\n"
                      b"2 1 3\n3 2 5\n4 1 1\n"),
    "fastapsp": ("f.mtx", b"%", b"4 4 3\n2 1 3\n3 2 5\n4 1 1\n"),
    "metis": ("m.graph", b"%", b"4 4 1\n2 3 3 1\n1 3 3 5 4 2\n1 1 2 5\n2 2\n"),
    "snap": ("e.txt", b"#", b"# FromNodeId ToNodeId\n0 1\n1 2\n2 0\n3 1\n"),
    "cedge": ("c.cedge", b"#", b"0 0 1 0.5\n1 1 2 0.25\n2 2 3 1.5\n"),
    "dimacs": ("d.gr", b"c", b"c road\np sp 4 5\na 1 2 3\na 2 3 4\na 3 1 5\na 4 1 6\na 1 4 2\n"),
}

# Tokens a hostile file might hold where a number belongs.
NASTY_TOKENS = [
    b"0", b"-1", b"-0", b"1.5", b"1e400", b"-1e400", b"nan", b"inf", b"-inf", b"2147483647", b"2147483648",
    b"4294967296", b"9223372036854775807", b"9223372036854775808", b"-9223372036854775809",
    b"99999999999999999999999999999", b"2000000000", b"1e18", b"0x10", b"1,5", b"+", b"-", b".", b"e5",
    b"1_000", b"\xff\xfe", b"\xc3\xa9", b"\x00", b"a", b"c", b"p", b"%", b"#", b"%%MatrixMarket", b"",
]


@contextmanager
def time_limit(seconds: int):
    """Fail (TimeoutError) when the block runs longer than ``seconds``: a hang is a failure."""

    def expire(signum, frame):
        raise TimeoutError(f"reader still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def read_or_refuse(path):
    """Read ``path``; a GraphFormatError is a fine answer, anything else fails the test."""
    with time_limit(CASE_SECONDS):
        try:
            graph = read_graph(path)
        except GraphFormatError as exc:
            message = str(exc)
            assert str(path) in message and "\n" not in message, message
            return None
    assert isinstance(graph, Graph)
    assert graph.n >= 1 and np.all(np.isfinite(graph.weights)) and np.all(graph.weights >= 0)
    return graph


# ---------------------------------------------------------------- mutations
def _tokens(data: bytes):
    """(start, end) of every whitespace-separated token."""
    spans, i = [], 0
    for part in data.split(b"\n"):
        j = 0
        for word in part.split():
            k = part.index(word, j)
            spans.append((i + k, i + k + len(word)))
            j = k + len(word)
        i += len(part) + 1
    return spans


@st.composite
def mutated(draw, data: bytes) -> bytes:
    """``data`` after one to three hostile edits."""
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["truncate", "random bytes", "replace token", "delete token",
                                     "swap tokens", "delete line", "repeat line", "crlf", "blank lines",
                                     "comment", "non-utf8", "huge count"]))
        spans = _tokens(data)
        lines = data.split(b"\n")
        if kind == "truncate" and data:
            data = data[: draw(st.integers(0, len(data) - 1))]
        elif kind == "random bytes":
            at = draw(st.integers(0, len(data)))
            data = data[:at] + draw(st.binary(min_size=1, max_size=8)) + data[at:]
        elif kind == "replace token" and spans:
            a, b = draw(st.sampled_from(spans))
            data = data[:a] + draw(st.sampled_from(NASTY_TOKENS)) + data[b:]
        elif kind == "delete token" and spans:
            a, b = draw(st.sampled_from(spans))
            data = data[:a] + data[b:]
        elif kind == "swap tokens" and len(spans) > 1:
            (a, b), (c, d) = sorted(draw(st.lists(st.sampled_from(spans), min_size=2, max_size=2, unique=True)))
            data = data[:a] + data[c:d] + data[b:c] + data[a:b] + data[d:]
        elif kind == "delete line" and len(lines) > 1:
            del lines[draw(st.integers(0, len(lines) - 1))]
            data = b"\n".join(lines)
        elif kind == "repeat line" and lines:
            j = draw(st.integers(0, len(lines) - 1))
            lines.insert(j, lines[j])
            data = b"\n".join(lines)
        elif kind == "crlf":
            data = data.replace(b"\n", b"\r\n")
        elif kind == "blank lines":
            lines.insert(draw(st.integers(0, len(lines))), b"")
            data = b"\n".join(lines)
        elif kind == "comment":
            marker = draw(st.sampled_from([b"%", b"#", b"c", b"%%", b"  %"]))
            lines.insert(draw(st.integers(0, len(lines))), marker + b" odd comment")
            data = b"\n".join(lines)
        elif kind == "non-utf8":
            at = draw(st.integers(0, len(data)))
            data = data[:at] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xe9t\xe9", b"\x80\x80"])) + data[at:]
        elif kind == "huge count":
            numbers = [s for s in spans if data[s[0]:s[1]].isdigit()]
            if numbers:
                a, b = draw(st.sampled_from(numbers))
                data = data[:a] + draw(st.sampled_from([b"2000000000", b"2147483647", b"4611686018427387904",
                                                        b"99999999999999999999"])) + data[b:]
    return data


@pytest.mark.parametrize("fmt", sorted(VALID))
def test_valid_sample_reads(tmp_path, fmt):
    name, _, data = VALID[fmt]
    path = tmp_path / name
    path.write_bytes(data)
    assert read_or_refuse(path) is not None


@pytest.mark.parametrize("fmt", sorted(VALID))
def test_mutated_file_is_read_or_refused(tmp_path, fmt):
    name, _, original = VALID[fmt]

    @settings(**SETTINGS)
    @given(data=mutated(original), gz=st.booleans())
    def check(data, gz):
        path = tmp_path / (name + (".gz" if gz else ""))
        path.write_bytes(gzip.compress(data) if gz else data)
        read_or_refuse(path)

    check()


@pytest.mark.parametrize("fmt", sorted(VALID))
def test_random_bytes_are_read_or_refused(tmp_path, fmt):
    name = VALID[fmt][0]

    @settings(**SETTINGS)
    @given(data=st.binary(max_size=200))
    def check(data):
        path = tmp_path / name
        path.write_bytes(data)
        read_or_refuse(path)

    check()


def test_truncated_gzip_is_refused(tmp_path):
    name, _, data = VALID["mtx"]
    packed = gzip.compress(data)
    for cut in (2, 10, len(packed) // 2, len(packed) - 1):
        path = tmp_path / (name + ".gz")
        path.write_bytes(packed[:cut])
        with pytest.raises(GraphFormatError, match="damaged gzip"):
            read_graph(path)


# ----------------------------------------------------- benign rewrites agree
def arcs(graph):
    src, dst, w = graph.arcs()
    return list(zip(src.tolist(), dst.tolist(), w.tolist())), graph.n, graph.directed


@st.composite
def benign(draw, data: bytes, comment: bytes) -> bytes:
    """``data`` rewritten in ways that must not change the graph."""
    lines = data.split(b"\n")
    if draw(st.booleans()):  # extra spaces and tabs around and between fields
        lines = [b"  " + b" \t ".join(line.split()) + b" " if line.strip() else line for line in lines]
    if comment != b"%" or not lines[0].startswith(b"%%"):
        insert_from = 0
    else:
        insert_from = 1  # the Matrix Market banner stays on the first line
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(insert_from, len(lines)))
        lines.insert(at, comment + b" a comment, even between entries")
    out = b"\n".join(lines)
    if draw(st.booleans()):
        out = out.replace(b"\n", b"\r\n")
    return out


@pytest.mark.parametrize("fmt", sorted(VALID))
def test_benign_rewrites_give_the_same_graph(tmp_path, fmt):
    name, comment, original = VALID[fmt]
    path = tmp_path / name
    path.write_bytes(original)
    expected = arcs(read_graph(path))

    @settings(**dict(SETTINGS, max_examples=15))
    @given(data=benign(original, comment), gz=st.booleans())
    def check(data, gz):
        target = tmp_path / (name + (".gz" if gz else ""))
        target.write_bytes(gzip.compress(data) if gz else data)
        with time_limit(CASE_SECONDS):
            assert arcs(read_graph(target)) == expected

    check()


# ------------------------------------------------------------- huge counts
HUGE = {
    "mtx": ("huge.mtx", b"%%MatrixMarket matrix coordinate real general\n2000000000 2000000000 1\n1 2 3\n", 2),
    "fastapsp": ("huge_fa.mtx", b"2000000000 2000000000 1\n1 2\n", 1),
    "dimacs": ("huge.gr", b"p sp 2000000000 1\na 1 2 3\n", 1),
    "snap": ("huge.txt", b"0 1\n1 1999999999\n", 2),
    "cedge": ("huge.cedge", b"0 0 1999999999 1.0\n", 1),
    "metis": ("huge.graph", b"2000000000 1\n2\n1\n", None),
}


@pytest.mark.parametrize("fmt", sorted(HUGE))
def test_declared_huge_count_fails_without_allocating(tmp_path, fmt):
    name, data, line = HUGE[fmt]
    path = tmp_path / name
    path.write_bytes(data)
    tracemalloc.start()
    try:
        with time_limit(CASE_SECONDS), pytest.raises(GraphFormatError) as info:
            read_graph(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    where = f"{path} line {line}:" if line else f"{path}:"
    assert str(info.value).startswith(where), info.value
    assert peak < 2**20, peak  # nothing was sized from the 2e9 vertices (it would take 16 GB)
