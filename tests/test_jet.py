"""Jet (fastapsp.partition.jet): its NumPy path in CI, the GPU partitioner where CuPy sees a device.

Validity and balance are checked from the raw edge list with plain NumPy/Python
(tests/partition_cases.py).  The CUDA kernels of fastapsp/kernels/jet.cu are
checked three ways:

* what they compute, written out as plain per-vertex loops here, against the
  array-op functions of jet.py (the NumPy path);
* the kernel source itself, compiled for the host with g++ (CUDA's thread
  indices and atomics emulated, one thread at a time) and launched through
  jet.py's own kernel path on NumPy arrays, against the array-op path: kernel
  by kernel and for whole partitions.  The emulated launch also checks every
  argument against the kernel's parameter list (array dtypes, scalar types);
* on a GPU: the kernels against the array-op path on CuPy, and whole
  partitions on CuPy against NumPy.
"""

from __future__ import annotations

import ctypes
import importlib
import re
import shutil
import subprocess
from functools import partial

import numpy as np
import pytest

from conftest import _cupy_usable, host
from fastapsp.errors import BackendError
from fastapsp.graph import Graph
from fastapsp.partition import partition_graph
from fastapsp.partition.isolated import partition_apart
from fastapsp.partition.jet import (BUCKETS, _apply_moves, _connections, _contract, _heaviest_neighbour,
                                    _heavy_edge_matching, _jetr_moves, _Level, _lp_candidates, _lp_move, _match,
                                    _part_weights, _rebalance_rows, jet_partition)
from partition_cases import check_valid, edge_cut, grid_case, minnesota_case, random_case

pytest.importorskip("pymetis")  # the coarsest graph is partitioned by METIS

jet_module = importlib.import_module("fastapsp.partition.jet")  # the package's attribute "jet" is the function


GRAPHS = {"grid": lambda: grid_case(40), "minnesota": minnesota_case, "random": lambda: random_case(5, 500, 1300)}


# ------------------------------------------------------------------ NumPy path (CI)
@pytest.mark.parametrize("name", list(GRAPHS))
@pytest.mark.parametrize("k", [2, 7, 16])
def test_numpy_path_valid_and_balanced(name, k):
    graph, edges = GRAPHS[name]()
    indptr, indices = graph.undirected_adjacency()
    # A small coarsest size, so that several levels of coarsening and refinement run.
    labels = jet_partition(indptr, indices, k, seed=3, imbalance=0.03, coarsest=max(4 * k, 60))
    check_valid(graph, labels, k, 0.03)
    assert labels.dtype == np.int32
    # A partition, not a labelling at random: within 1.5 times METIS's edge cut.
    metis = partition_graph(graph, k, "metis", seed=3).labels
    assert edge_cut(edges, labels) <= 1.5 * edge_cut(edges, metis)


def test_numpy_path_deterministic_and_seeded():
    graph, _ = GRAPHS["grid"]()
    indptr, indices = graph.undirected_adjacency()
    a = jet_partition(indptr, indices, 8, seed=11, imbalance=0.03, coarsest=60)
    b = jet_partition(indptr, indices, 8, seed=11, imbalance=0.03, coarsest=60)
    np.testing.assert_array_equal(a, b)
    others = {jet_partition(indptr, indices, 8, seed=s, imbalance=0.03, coarsest=60).tobytes() for s in range(4)}
    assert len(others) > 1


def test_exact_balance_without_slack():
    """imbalance 0 with n divisible by k: every part gets exactly n / k vertices."""
    graph, _ = GRAPHS["grid"]()
    indptr, indices = graph.undirected_adjacency()
    labels = jet_partition(indptr, indices, 16, seed=2, imbalance=0.0, coarsest=80)
    np.testing.assert_array_equal(np.bincount(labels, minlength=16), np.full(16, graph.n // 16))


def disconnected_case():
    """Two grids, a path, and 40 isolated vertices (1,000 vertices): parts must take pieces of several."""
    a, _ = grid_case(20)
    b, _ = grid_case(22)
    src_a, dst_a, _ = a.arcs()
    src_b, dst_b, _ = b.arcs()
    path = np.arange(400 + 484, 960)
    src = np.concatenate([src_a, src_b + 400, path[:-1]])
    dst = np.concatenate([dst_a, dst_b + 400, path[1:]])
    return Graph.from_edges(1000, src, dst, directed=False, name="disconnected")


@pytest.mark.parametrize("k", [3, 8])
def test_disconnected_graph_with_isolated_vertices(k):
    graph = disconnected_case()
    indptr, indices = graph.undirected_adjacency()
    assert np.count_nonzero(np.diff(indptr) == 0) == 40
    labels = jet_partition(indptr, indices, k, seed=1, imbalance=0.03, coarsest=60)
    check_valid(graph, labels, k, 0.03)


def test_k_one_and_bad_k():
    graph, _ = GRAPHS["random"]()
    indptr, indices = graph.undirected_adjacency()
    assert not jet_partition(indptr, indices, 1, seed=0, imbalance=0.03).any()
    with pytest.raises(ValueError, match="k: 0 is outside"):
        jet_partition(indptr, indices, 0, seed=0, imbalance=0.03)


def test_matching_and_contraction_keep_weights():
    """Coarse vertex weights sum to n, coarse edge weights to the edges between different coarse vertices."""
    graph, edges = GRAPHS["minnesota"]()
    indptr, indices = graph.undirected_adjacency()
    g = _Level(np, indptr, indices, np.ones(indices.size, np.int64), np.ones(graph.n, np.int64))
    mate = _match(np, g, 4, seed=1, level=1)
    matched = np.flatnonzero(mate >= 0)
    assert np.all(mate[mate[matched]] == matched)  # a matching: partners point at each other
    assert np.all(mate[matched] != matched)
    coarse = _contract(np, g, mate)
    cmap = g.coarse_map
    assert coarse.n < 0.8 * graph.n
    assert coarse.vweights.sum() == graph.n
    np.testing.assert_array_equal(coarse.vweights, np.bincount(cmap, minlength=coarse.n))
    between = sum(cmap[u] != cmap[v] for u, v in edges)
    assert coarse.eweights.sum() == 2 * between
    assert np.all(coarse.indices != np.repeat(np.arange(coarse.n), np.diff(coarse.indptr)))  # no loops


def test_two_hop_matching_pairs_leaves_of_a_star():
    """A star has one heavy-edge match at most; leaves hanging from the hub are paired by two-hop matching."""
    n = 21
    graph = Graph.from_edges(n, np.zeros(n - 1, np.int64), np.arange(1, n), directed=False, name="star")
    indptr, indices = graph.undirected_adjacency()
    g = _Level(np, indptr, indices, np.ones(indices.size, np.int64), np.ones(n, np.int64))
    mate = _match(np, g, 2, seed=0, level=1)
    assert np.count_nonzero(mate >= 0) >= n - 2


# ------------------------------------------------------------------ what the kernels compute, as plain loops
def weighted_level(seed, n=200, m=600, heaviest=3):
    """A level with random arc and vertex weights (ties likely: weights 1..heaviest) and two rows longer than
    jet.cu's small-row limit (vertex 0 joined to 60 vertices, vertex 1 to 24), random labels, k = 5."""
    rng = np.random.default_rng(seed)
    src = np.concatenate([rng.integers(0, n, m), np.zeros(60, np.int64), np.ones(24, np.int64)])
    dst = np.concatenate([rng.integers(0, n, m), np.arange(2, 62), np.arange(40, 64)])
    graph = Graph.from_edges(n, src, dst, directed=False, name=f"weighted{seed}")
    indptr, indices = graph.undirected_adjacency()
    assert np.diff(indptr).max() > jet_module.SMALL_DEGREE
    g = _Level(np, indptr, indices, rng.integers(1, heaviest + 1, indices.size), rng.integers(1, 3, n))
    return g, rng.integers(0, 5, n).astype(np.int32), rng


def hash32(x, salt):
    """The kernels' hash, with Python integers."""
    mask = 0xFFFFFFFF
    h = (x ^ salt) & mask
    h ^= h >> 16
    h = (h * 0x7FEB352D) & mask
    h ^= h >> 15
    h = (h * 0x846CA68B) & mask
    return h ^ (h >> 16)


def arcs_of(g, v):
    return range(int(g.indptr[v]), int(g.indptr[v + 1]))


def loop_heaviest_neighbour(g, allowed, salt):
    """jet_heaviest_neighbour, one vertex at a time."""
    best = []
    for v in range(g.n):
        pick = None
        for a in arcs_of(g, v):
            if allowed[a]:
                key = (int(g.eweights[a]), hash32(int(g.indices[a]), salt))
                if pick is None or key > pick[0]:
                    pick = (key, int(g.indices[a]))
        best.append(-1 if pick is None else pick[1])
    return np.array(best)


def loop_connections(g, labels, allowed_part):
    """jet_connections_of, one vertex at a time."""
    best, conn, own = [], [], []
    for v in range(g.n):
        sums, mine = {}, 0
        for a in arcs_of(g, v):
            p = int(labels[g.indices[a]])
            if p == labels[v]:
                mine += int(g.eweights[a])
            elif allowed_part[p]:
                sums[p] = sums.get(p, 0) + int(g.eweights[a])
        pick = min(sums, key=lambda p: (-sums[p], p)) if sums else -1
        best.append(pick)
        conn.append(sums.get(pick, 0))
        own.append(mine)
    return np.array(best), np.array(conn), np.array(own)


def loop_afterburner(g, labels, dest, gain, cand, salt):
    """The recomputed gains of jet_lp_move, one vertex at a time (0 for non-candidates)."""
    out = []
    for v in range(g.n):
        total = 0
        if cand[v]:
            for a in arcs_of(g, v):
                u = int(g.indices[a])
                ahead = cand[u] and (gain[u], hash32(u, salt)) > (gain[v], hash32(v, salt))
                where = dest[u] if ahead else labels[u]
                total += int(g.eweights[a]) * (int(where == dest[v]) - int(where == labels[v]))
        out.append(total)
    return np.array(out)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_kernel_logic_matches_array_functions(seed):
    """The per-vertex rules of jet.cu, written out in Python, give what the array-op functions give."""
    g, labels, rng = weighted_level(seed)
    allowed = rng.random(g.indices.size) < 0.7
    salt = 12345 + seed
    np.testing.assert_array_equal(_heaviest_neighbour(np, g, allowed, salt), loop_heaviest_neighbour(g, allowed, salt))
    for parts in (None, rng.random(5) < 0.6):
        got = _connections(np, g, labels, 5, allowed_part=parts)
        want = loop_connections(g, labels, np.ones(5, bool) if parts is None else parts)
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)
    sizes = np.bincount(labels, weights=g.vweights, minlength=5).astype(np.int64)
    locked = rng.random(g.n) < 0.2
    dest, gain, cand, stats = _lp_candidates(np, g, labels, locked, sizes, 5, 0.75)
    best, conn, own = loop_connections(g, labels, np.ones(5, bool))
    np.testing.assert_array_equal(gain, conn - own)
    np.testing.assert_array_equal(cand, (best >= 0) & ~locked & ((conn >= own) | (own - conn < np.floor(0.75 * own))))
    assert stats[0] == sum(int(g.eweights[a]) for v in range(g.n) for a in arcs_of(g, v)
                           if labels[g.indices[a]] != labels[v])
    np.testing.assert_array_equal(stats[1:], sizes)
    new, moved, new_sizes = _lp_move(np, g, labels, dest, gain, cand, sizes, salt)
    after = loop_afterburner(g, labels, dest, gain, cand, salt)
    np.testing.assert_array_equal(moved, cand & (after >= 0))
    np.testing.assert_array_equal(new, np.where(moved, dest, labels))
    np.testing.assert_array_equal(new_sizes, np.bincount(new, weights=g.vweights, minlength=5))
    np.testing.assert_array_equal(_part_weights(np, labels, g.vweights, 5), sizes)


def test_loss_buckets():
    """0 for losses <= 0, the loss up to 63, 57 + bit length above: monotone, 89 buckets."""
    loss = np.array([-5, 0, 1, 2, 63, 64, 127, 128, 1000, 2 ** 31 - 1])
    want = [0 if x <= 0 else x if x < 64 else 57 + int(x).bit_length() for x in loss.tolist()]
    np.testing.assert_array_equal(jet_module._loss_bucket(np, loss), want)
    assert max(want) == BUCKETS - 1


def rebalance_state(seed):
    """A weighted level, labels, part weights, and a bound that leaves some parts overweight.

    Arc weights up to 120: losses reach every kind of bucket (<= 0, 1..63, by bit length above).
    Seeds 1-3: the two heaviest parts are over; seeds 4-6: every part above the average, by more.
    """
    g, labels, rng = weighted_level(seed, heaviest=120)
    sizes = np.bincount(labels, weights=g.vweights, minlength=5).astype(np.int64)
    bound = int(np.sort(sizes)[2]) if seed < 4 else -(-int(sizes.sum()) // 5)
    total = int(g.vweights.sum())
    soft = (total + 5 * bound) // 10
    return g, labels, sizes, bound, soft


def sorted_rows(rows):
    return rows[np.lexsort((rows[:, 3], rows[:, 1]))]


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
def test_rebalance_rows_cover_the_cheapest_moves(seed):
    """The rows kept by the loss buckets hold every vertex the rebalancing takes: its moves are those of all rows."""
    g, labels, sizes, bound, soft = rebalance_state(seed)
    rows = _rebalance_rows(np, g, labels, sizes, 5, bound, soft, salt=seed)
    best, conn, own = loop_connections(g, labels, sizes < soft)
    over = np.flatnonzero(sizes[labels] > bound)
    loss = np.clip(own - conn, -2 ** 31, 2 ** 31 - 1)
    everything = np.stack([over, labels[over], best[over],
                           loss[over] * 2 ** 32 + np.array([hash32(int(v), seed) for v in over]),
                           g.vweights[over]], axis=1)
    assert 0 < len(rows) <= len(everything)
    assert {tuple(r) for r in rows.tolist()} <= {tuple(r) for r in everything.tolist()}
    for a, b in zip(_jetr_moves(rows, sizes, 5, bound, soft), _jetr_moves(everything, sizes, 5, bound, soft)):
        np.testing.assert_array_equal(a, b)
    moved, to = _jetr_moves(rows, sizes, 5, bound, soft)
    new, new_sizes = _apply_moves(np, g, labels, sizes, moved, to, k=5)
    np.testing.assert_array_equal(new_sizes, np.bincount(new, weights=g.vweights, minlength=5))
    assert np.all(new_sizes[sizes <= bound] <= bound)  # no destination past the bound
    assert np.all(new_sizes[sizes > bound] < sizes[sizes > bound])
    excess_before = np.maximum(sizes - bound, 0).sum()
    assert np.maximum(new_sizes - bound, 0).sum() < excess_before


# ------------------------------------------------------------------ jet.cu compiled for the host
EMULATION = r"""
#include <cmath>
struct jet_dim3 { unsigned int x, y, z; };
extern "C" { jet_dim3 threadIdx = {0, 0, 0}, blockIdx = {0, 0, 0}, blockDim = {256, 1, 1}; }
#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__ __restrict
#define JET_WARP_REDUCE 0
static unsigned long long atomicAdd(unsigned long long* a, unsigned long long v) {
    unsigned long long old = *a; *a = old + v; return old;
}
static int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
"""

_C_TYPES = {"i64*": np.int64, "int*": np.int32, "bool*": np.bool_, "unsigned long long*": np.uint64,
            "i64": np.int64, "u32": np.uint32, "double": np.float64}
_CTYPES = {np.int64: ctypes.c_longlong, np.uint32: ctypes.c_uint32, np.float64: ctypes.c_double}


class HostKernels:
    """jet.cu built with g++; ``launch`` stands in for jet.py's ``_launch`` (one thread at a time)."""

    def __init__(self, directory):
        from fastapsp.kernels import kernel_source

        source = kernel_source("jet.cu")
        path = directory / "jet_host.cpp"
        path.write_text(EMULATION + source)
        library = directory / "libjet_host.so"
        subprocess.run(["g++", "-std=c++17", "-O1", "-shared", "-fPIC", "-o", str(library), str(path)], check=True,
                       capture_output=True)
        self.lib = ctypes.CDLL(str(library))
        self.params = {}
        for name, params in re.findall(r'extern "C" __global__ void (\w+)\((.*?)\)\s*\{', source, re.S):
            types = []
            for p in params.split(","):
                words = p.replace("__restrict__", "").replace("const ", "").split()
                types.append(_C_TYPES[" ".join(words[:-1]).replace(" *", "*")])
            self.params[name] = types
        self.launched = []

    def launch(self, name, n, *args):
        types = self.params[name]
        assert len(args) == len(types), f"{name}: {len(args)} arguments for {len(types)} parameters"
        cargs = []
        for i, (want, a) in enumerate(zip(types, args)):
            if isinstance(a, np.ndarray):
                assert a.dtype == want, f"{name} argument {i}: array of {a.dtype}, kernel reads {np.dtype(want)}"
                assert a.flags.c_contiguous, f"{name} argument {i}: not contiguous"
                cargs.append(ctypes.c_void_p(a.ctypes.data))
            else:
                assert type(a) is want, f"{name} argument {i}: {type(a).__name__}, kernel takes {want.__name__}"
                cargs.append(_CTYPES[want](a.item()))
        self.launched.append(name)
        kernel = getattr(self.lib, name)
        kernel.restype = None
        block = jet_module._BLOCK
        thread = ctypes.c_uint.in_dll(self.lib, "threadIdx")
        blk = ctypes.c_uint.in_dll(self.lib, "blockIdx")
        for b in range(-(-n // block)):
            blk.value = b
            for t in range(block):
                thread.value = t
                kernel(*cargs)


@pytest.fixture(scope="module")
def host_kernels(tmp_path_factory):
    if shutil.which("g++") is None:
        pytest.skip("g++ is needed to build jet.cu for the host")
    return HostKernels(tmp_path_factory.mktemp("jet_host"))


@pytest.fixture
def on_host_kernels(host_kernels, monkeypatch):
    """jet.py's kernel path on NumPy arrays, its launches run by the host build of jet.cu."""
    monkeypatch.setattr(jet_module, "_kernels", lambda xp, kernels: kernels)
    monkeypatch.setattr(jet_module, "_launch", host_kernels.launch)
    host_kernels.launched.clear()
    return host_kernels


def array_path(function, *args, **kwargs):
    """``function`` on jet.py's array-op path (``kernels=False``, also under on_host_kernels)."""
    return function(*args, kernels=False, **kwargs)


def assert_tables_empty(g):
    keys, sums = g.tables(np)
    assert keys.size == 2 * g.m  # the level has long rows: the scratch tables are in use
    assert np.all(keys == -1) and not sums.any()


def assert_same_contraction(xp, g, mate, **kernels):
    """_contract with the kernels (``kernels`` empty) and on the array-op path: the same coarse level and map."""
    fine_a, fine_b = (_Level(xp, g.indptr, g.indices, g.eweights, g.vweights) for _ in range(2))
    got, want = _contract(xp, fine_a, mate, **kernels), array_path(_contract, xp, fine_b, mate)
    for name in ("indptr", "indices", "eweights", "vweights", "rows"):
        np.testing.assert_array_equal(host(getattr(got, name)), host(getattr(want, name)), err_msg=name)
    np.testing.assert_array_equal(host(fine_a.coarse_map), host(fine_b.coarse_map))
    assert got.n == want.n and got.m == want.m


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
def test_host_built_kernels_match_array_path(on_host_kernels, seed):
    g, labels, rng = weighted_level(seed)
    allowed = rng.random(g.indices.size) < 0.7
    np.testing.assert_array_equal(_heaviest_neighbour(np, g, allowed, 99),
                                  array_path(_heaviest_neighbour, np, g, allowed, 99))
    for cap in (2, 3, 5):
        np.testing.assert_array_equal(_heavy_edge_matching(np, g, cap, seed), array_path(_heavy_edge_matching, np, g,
                                                                                         cap, seed))
        assert_same_contraction(np, g, array_path(_match, np, g, cap, seed, 1))
    assert_same_contraction(np, g, np.full(g.n, -1, np.int64))  # nothing matched: the same graph
    sizes = _part_weights(np, labels, g.vweights, 5)
    np.testing.assert_array_equal(sizes, array_path(_part_weights, np, labels, g.vweights, 5))
    locked = rng.random(g.n) < 0.2
    stats = np.zeros((2, 6), np.int64)
    stats[1, 0] = 7
    got = _lp_candidates(np, g, labels, locked, sizes, 5, 0.25, (stats[0], stats[1]))
    want = array_path(_lp_candidates, np, g, labels, locked, sizes, 5, 0.25)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    assert stats[1, 0] == 0  # the next call's statistics start at zero
    assert_tables_empty(g)
    dest, gain, cand, _ = want
    new, moved, new_sizes = _lp_move(np, g, labels, dest, gain, cand, sizes.copy(), 7)
    for a, b in zip((new, moved, new_sizes), array_path(_lp_move, np, g, labels, dest, gain, cand, sizes, 7)):
        np.testing.assert_array_equal(a, b)
    g, labels, sizes, bound, soft = rebalance_state(seed)
    # The first kernel of the rebalancing alone: destinations, keys and the loss histogram.
    dest, key, hist = np.empty(g.n, np.int64), np.empty(g.n, np.int64), np.zeros(5 * BUCKETS, np.int64)
    on_host_kernels.launch("jet_rebalance_candidates", g.n, g.indptr, g.indices, g.eweights, g.vweights, labels,
                           sizes, np.int64(bound), np.int64(soft), np.uint32(seed), np.int64(BUCKETS), np.int64(g.n),
                           *g.tables(np), dest, key, hist)
    want = array_path(_rebalance_rows, np, g, labels, sizes, 5, bound, soft, seed)
    over = np.flatnonzero(sizes[labels] > bound)
    np.testing.assert_array_equal(np.flatnonzero(dest > -2), over)
    best, conn, own = _connections(np, g, labels, 5, allowed_part=sizes < soft)
    loss = own[over] - conn[over]
    np.testing.assert_array_equal(dest[over], best[over])
    np.testing.assert_array_equal(key[over] >> 32, loss)
    np.testing.assert_array_equal(hist, np.bincount(labels[over] * BUCKETS + jet_module._loss_bucket(np, loss),
                                                    weights=g.vweights[over], minlength=5 * BUCKETS))
    assert {tuple(r) for r in want.tolist()} <= set(zip(over, labels[over], best[over], key[over],
                                                        g.vweights[over]))
    scratch = (np.zeros(5 * BUCKETS, np.int64), np.empty((g.n, 5), np.int64))
    rows = _rebalance_rows(np, g, labels, sizes, 5, bound, soft, seed, scratch)
    np.testing.assert_array_equal(sorted_rows(rows),
                                  sorted_rows(array_path(_rebalance_rows, np, g, labels, sizes, 5, bound, soft, seed)))
    assert not scratch[0].any()  # the histogram is empty again for the next call
    assert_tables_empty(g)
    moved, to = _jetr_moves(rows, sizes, 5, bound, soft)
    got = _apply_moves(np, g, labels, sizes.copy(), moved, to, k=5)
    for a, b in zip(got, array_path(_apply_moves, np, g, labels, sizes, moved, to, k=5)):
        np.testing.assert_array_equal(a, b)
    assert set(on_host_kernels.launched) == set(on_host_kernels.params)  # every kernel of jet.cu ran


@pytest.mark.parametrize("name,k", [("grid", 7), ("minnesota", 16), ("random", 5), ("disconnected", 8)])
def test_host_built_kernels_give_the_array_path_partition(on_host_kernels, name, k):
    """Whole partitions: jet.py's kernel path (jet.cu built for the host) = its array-op path."""
    graph = disconnected_case() if name == "disconnected" else GRAPHS[name]()[0]
    indptr, indices = graph.undirected_adjacency()
    got = jet_partition(indptr, indices, k, seed=5, imbalance=0.03, coarsest=max(4 * k, 60))
    assert {"jet_propose", "jet_lp_candidates", "jet_lp_move", "jet_rebalance_rows"} <= set(on_host_kernels.launched)
    want = array_path(jet_partition, indptr, indices, k, seed=5, imbalance=0.03, coarsest=max(4 * k, 60))
    np.testing.assert_array_equal(got, want)
    check_valid(graph, got, k, 0.03)


# ------------------------------------------------------------------ the kernels on a GPU
def _on_device(xp, g):
    return _Level(xp, xp.asarray(g.indptr), xp.asarray(g.indices), xp.asarray(g.eweights), xp.asarray(g.vweights))


@pytest.mark.gpu
@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
def test_gpu_kernels_match_array_path(xp, seed):
    if xp is np:
        pytest.skip("runs on CuPy")

    def both(function, *args, **kwargs):
        """``function`` with the kernels, then on the array-op path, both on CuPy."""
        return function(*args, **kwargs), function(*args, kernels=False, **kwargs)

    def same(pair):
        got, want = pair
        if isinstance(got, tuple):
            for a, b in zip(got, want):
                np.testing.assert_array_equal(host(a), host(b))
        else:
            np.testing.assert_array_equal(host(got), host(want))

    g, labels, rng = weighted_level(seed)
    gd, ld = _on_device(xp, g), xp.asarray(labels)
    allowed = xp.asarray(rng.random(g.indices.size) < 0.7)
    same(both(_heaviest_neighbour, xp, gd, allowed, 99))
    for cap in (2, 3, 5):
        same(both(_heavy_edge_matching, xp, gd, cap, seed))
        assert_same_contraction(xp, gd, _match(xp, gd, cap, seed, 1, kernels=False))
    same(both(_part_weights, xp, ld, gd.vweights, 5))
    sizes = _part_weights(xp, ld, gd.vweights, 5)
    locked = xp.asarray(rng.random(g.n) < 0.2)
    stats = xp.zeros((2, 6), dtype=xp.int64)
    got = _lp_candidates(xp, gd, ld, locked, sizes, 5, 0.25, (stats[0], stats[1]))
    want = _lp_candidates(xp, gd, ld, locked, sizes, 5, 0.25, kernels=False)
    same((got, want))
    keys, sums = gd.tables(xp)
    assert bool((keys == -1).all()) and not bool(sums.any())
    dest, gain, cand, _ = want
    moved_k = _lp_move(xp, gd, ld, dest, gain, cand, sizes.copy(), 7)
    moved_a = _lp_move(xp, gd, ld, dest, gain, cand, sizes.copy(), 7, kernels=False)
    same((moved_k, moved_a))
    g, labels, sizes_h, bound, soft = rebalance_state(seed)
    gd, ld, sizes = _on_device(xp, g), xp.asarray(labels), xp.asarray(sizes_h)
    scratch = (xp.zeros(5 * BUCKETS, dtype=xp.int64), xp.empty((g.n, 5), dtype=xp.int64))
    rows = _rebalance_rows(xp, gd, ld, sizes, 5, bound, soft, seed, scratch)
    assert not bool(scratch[0].any())
    want_rows = _rebalance_rows(xp, gd, ld, sizes, 5, bound, soft, seed, kernels=False)
    np.testing.assert_array_equal(sorted_rows(rows), sorted_rows(want_rows))
    np.testing.assert_array_equal(sorted_rows(rows), sorted_rows(_rebalance_rows(np, g, labels, sizes_h, 5, bound,
                                                                                 soft, seed)))
    moved, to = _jetr_moves(rows, sizes_h, 5, bound, soft)
    same(both(lambda **kw: _apply_moves(xp, gd, ld, sizes.copy(), xp.asarray(moved), xp.asarray(to), k=5, **kw)))


# ------------------------------------------------------------------ the registered GPU partitioner
def test_jet_without_gpu_names_cupy(monkeypatch):
    if _cupy_usable():
        pytest.skip("a GPU is visible")
    graph, _ = GRAPHS["random"]()
    with pytest.raises(BackendError, match="cupy"):
        partition_graph(graph, 4, "jet")
    with pytest.raises(BackendError, match="cupy"):
        partition_graph(graph, 4, "jet+b")


@pytest.mark.gpu
@pytest.mark.parametrize("name", [*GRAPHS, "disconnected"])
def test_gpu_jet_valid_deterministic_and_same_as_numpy(xp, name):
    if xp is np:
        pytest.skip("runs on CuPy")
    graph = disconnected_case() if name == "disconnected" else GRAPHS[name]()[0]
    indptr, indices = graph.undirected_adjacency()
    for k in (2, 16):
        on_device = jet_partition(xp.asarray(indptr), xp.asarray(indices), k, seed=3, imbalance=0.03,
                                  coarsest=max(4 * k, 60))
        assert type(on_device).__module__.startswith("cupy")
        on_host = jet_partition(indptr, indices, k, seed=3, imbalance=0.03, coarsest=max(4 * k, 60))
        np.testing.assert_array_equal(host(on_device), on_host)
        part = partition_graph(graph, k, "jet", seed=3)
        check_valid(graph, part.labels, k, 0.03)
        again = partition_graph(graph, k, "jet", seed=3)
        np.testing.assert_array_equal(part.labels, again.labels)
        # partition_graph sets vertices without arcs apart (fastapsp/partition/isolated.py), then runs Jet
        expected, _ = partition_apart(indptr, indices, k, partial(jet_partition, seed=3), imbalance=0.03)
        np.testing.assert_array_equal(part.labels, expected)
        refined = partition_graph(graph, k, "jet+b", seed=3)
        check_valid(graph, refined.labels, k, 0.03)
        assert refined.metrics()["boundary_vertices"] <= refined.details["boundary_vertices_before_refine"]
        assert refined.details["boundary_vertices_before_refine"] == part.metrics()["boundary_vertices"]


@pytest.mark.gpu
def test_gpu_auto_partitioner_is_jet_from_its_size_on(xp, monkeypatch):
    """``auto`` on the GPU: Jet (the same labels) once the graph has AUTO_JET_FROM vertices, METIS below;
    in a process that has worked on its GPU the threshold is AUTO_JET_FROM_WARM."""
    import fastapsp.backend as backend
    import fastapsp.partition as partition

    if xp is np:
        pytest.skip("runs on CuPy")
    graph, _ = GRAPHS["minnesota"]()
    monkeypatch.setattr(backend, "_GPU_WARM", False)  # a fresh process (earlier tests warmed this one)
    assert partition_graph(graph, 6, "auto", backend="cupy").method == "metis"  # 2,642 vertices
    monkeypatch.setattr(partition, "AUTO_JET_FROM", graph.n)
    monkeypatch.setattr(backend, "_GPU_WARM", False)
    auto = partition_graph(graph, 6, "auto", backend="cupy")
    assert auto.method == "jet"
    # Warm (the Jet run above marked it): the warm threshold decides, not AUTO_JET_FROM.
    monkeypatch.setattr(partition, "AUTO_JET_FROM", graph.n + 1)
    monkeypatch.setattr(partition, "AUTO_JET_FROM_WARM", graph.n + 1)
    assert backend.gpu_warm() and partition_graph(graph, 6, "auto", backend="cupy").method == "metis"
    monkeypatch.setattr(partition, "AUTO_JET_FROM_WARM", graph.n)
    assert partition_graph(graph, 6, "auto", backend="cupy").method == "jet"
    np.testing.assert_array_equal(auto.labels, partition_graph(graph, 6, "jet").labels)
    assert partition_graph(graph, 6, "auto", backend="numpy").method == "metis"


@pytest.mark.gpu
def test_gpu_work_marks_the_process_warm(xp, monkeypatch):
    """After a Jet partition, and after a GPU solve, the process counts as warm for ``auto``
    (AUTO_JET_FROM_WARM)."""
    import fastapsp
    import fastapsp.backend as backend

    if xp is np:
        pytest.skip("runs on CuPy")
    graph, _ = GRAPHS["minnesota"]()
    monkeypatch.setattr(backend, "_GPU_WARM", False)
    partition_graph(graph, 6, "jet")
    assert backend.gpu_warm()
    monkeypatch.setattr(backend, "_GPU_WARM", False)
    fastapsp.stats(graph, backend="cupy", k=6, partitioner="metis")
    assert backend.gpu_warm()


@pytest.mark.gpu
def test_gpu_jet_array_path_switch(xp):
    """``kernels=False`` runs the array-op code on CuPy: the same labels."""
    if xp is np:
        pytest.skip("runs on CuPy")
    graph, _ = GRAPHS["minnesota"]()
    indptr, indices = graph.undirected_adjacency()
    on_device = jet_partition(xp.asarray(indptr), xp.asarray(indices), 7, seed=4, imbalance=0.03, coarsest=60,
                              kernels=False)
    np.testing.assert_array_equal(host(on_device), jet_partition(indptr, indices, 7, seed=4, imbalance=0.03,
                                                                 coarsest=60))
