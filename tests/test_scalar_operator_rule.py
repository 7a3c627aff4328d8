"""The GPU path calls operations between an array and a scalar as functions (DEVELOPERS.md), checked on the CPU.

CuPy hands ``a - 1`` (an operator between a CuPy array, 0-d ones included,
and a Python or NumPy scalar) to NumPy's ufunc dispatch, whose CuPy side
imports ``cupyx`` and SciPy's sparse module; ``xp.subtract(a, 1)`` and
``a -= 1`` do not.  tests/fake_cupy.py installs a ``cupy`` built on NumPy
that records every such operator by its line, so the CuPy branches of the
boundary refinement (``refine_boundary``, what the ``+b`` partitioners run
on a GPU) and of the array helpers under it run here without a GPU:

* a self-test: the recorder finds operators with a scalar and only those;
* the refinement on the fake CuPy from METIS partitions: no operator with a
  scalar in fastapsp's code, and the labels and statistics of NumPy;
* ``_hash32``, ``count_values`` and ``arc_runs`` likewise;
* helpers of the GPU path that launch no kernel, from a run's inputs on
  minnesota: ``to_small``; the statistics' array path (``_update_chunk``,
  ``finalize`` on the device: ``_vertex_arrays``, ``_closeness``); the
  array-op fallback of ``assemble_row_block`` and ``assemble_in_result``;
  ``component_predecessors`` and ``assemble_predecessors``; ``_csr``,
  ``_transpose`` and ``_local_csr``; ``BoundaryGraph._close_supers`` and
  ``_place_cliques`` (Floyd-Warshall's kernels from NumPy): NumPy's results;
* Jet's array-op path (``jet_partition(..., kernels=False)``, the reference
  the kernels are tested against) on the fake CuPy: no operator with a scalar
  in fastapsp's code, and the labels of NumPy.

Jet's matching and contraction, which the refinement's clusters come from,
launch the kernels of fastapsp/kernels/jet.cu on CuPy; here
:class:`JetKernels` stands in for the launches (the kernels' results from
NumPy), so that the kernel path runs as on a GPU, Python code around the
launches included, and not the array-op path that NumPy takes (the last
test runs that one on the fake CuPy with ``kernels=False``).
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import fake_cupy
from fake_cupy import Arr
from fastapsp.graph import arc_rows, arc_runs, count_values
from fastapsp.partition._arrays import _hash32
from partition_cases import grid_case, minnesota_case

jet_module = importlib.import_module("fastapsp.partition.jet")  # the package's attribute "jet" is the function
FASTAPSP = Path(jet_module.__file__).resolve().parent.parent
_NONE = 0x7FFFFFFFFFFFFFFF  # jet_coarse_keys' key of an arc inside one coarse vertex


# ------------------------------------------------------------------ Jet's kernels on the fake CuPy
class JetKernels:
    """Stands in for jet.py's ``_launch``: the kernels that the refinement's clusters launch, on NumPy.

    Each writes what the kernel of jet.cu of that name writes (the array-op
    function of jet.py it mirrors, where there is one), into the fake device
    arrays it is given.  A kernel without a stand-in fails the test.
    """

    def __init__(self):
        self.launched = []

    def launch(self, name: str, n: int, *args) -> None:
        for i, a in enumerate(args):
            assert isinstance(a, Arr) or type(a) in (np.int64, np.uint32, np.float64), \
                f"{name} argument {i}: {type(a).__name__}, not a device array or a NumPy scalar"
        self.launched.append(name)
        getattr(self, name)(*(fake_cupy.plain(a) for a in args))

    @staticmethod
    def _heaviest(indptr, indices, weights, allowed, salt):
        level = SimpleNamespace(n=indptr.shape[0] - 1, indices=indices, eweights=weights,
                                rows=arc_rows(np, indptr, indices.shape[0]))
        return jet_module._heaviest_neighbour(np, level, allowed, int(salt), kernels=False)

    def jet_heaviest_neighbour(self, indptr, indices, weights, allowed, salt, n, best):
        best[:] = self._heaviest(indptr, indices, weights, allowed, salt)

    def jet_propose(self, indptr, indices, weights, vweights, mate, go, cap, salt, n, want):
        if go[0] == 0:
            want[:] = -1
            return
        rows = arc_rows(np, indptr, indices.shape[0])
        free = mate < 0
        allowed = free[rows] & free[indices] & (vweights[indices] <= cap - vweights[rows])
        want[:] = self._heaviest(indptr, indices, weights, allowed, salt)

    def jet_mutual(self, want, n, mate, found):
        v = np.flatnonzero(want >= 0)
        v = v[want[want[v]] == v]
        mate[v] = want[v]
        if v.shape[0]:
            found[0] = 1

    def jet_leaders(self, mate, n, leader):
        leader[:] = (mate < 0) | (np.arange(n) <= mate)

    def jet_coarse_map(self, mate, numbered, vweights, n, cmap, cweights):
        v = np.arange(n)
        lead = np.where((mate < 0) | (v <= mate), v, mate)
        cmap[:] = numbered[lead] - 1
        own = np.flatnonzero(lead == v)
        partner = mate[own]
        paired = (partner >= 0) & (partner != own)
        cweights[cmap[own]] = vweights[own] + np.where(paired, vweights[np.maximum(partner, 0)], 0)

    def jet_coarse_keys(self, rows, indices, cmap, m, nc, key):
        cu, cv = cmap[rows], cmap[indices]
        key[:] = np.where(cu == cv, _NONE, cu * nc + cv)

    def jet_coarse_starts(self, key, m, start):
        first = np.ones(m, dtype=bool)
        first[1:] = key[1:] != key[:-1]
        start[:] = first & (key != _NONE)

    def jet_coarse_arcs(self, key, w, numbered, m, nc, crows, ccols, cweights, rowcount):
        kept = np.flatnonzero(key != _NONE)
        arc = numbered[kept] - 1
        np.add.at(cweights, arc, w[kept])
        first = np.ones(m, dtype=bool)
        first[1:] = key[1:] != key[:-1]
        runs = kept[first[kept]]
        r = key[runs] // nc
        crows[numbered[runs] - 1] = r
        ccols[numbered[runs] - 1] = key[runs] - r * nc
        np.add.at(rowcount, r, 1)


@pytest.fixture
def fake(monkeypatch):
    """``cupy`` is the fake of tests/fake_cupy.py and Jet's launches run :class:`JetKernels`, for one test."""
    module = fake_cupy.install(monkeypatch)
    kernels = JetKernels()
    monkeypatch.setattr(jet_module, "_launch", kernels.launch)
    module.kernels = kernels
    return module


def _in_fastapsp(sites):
    """The sites in fastapsp's code (not in the tests or the fake), by kind: lines ``path:line (function) ...``."""
    found = {}
    for site, count in sites.items():
        path = Path(site.filename).resolve()
        if path.is_relative_to(FASTAPSP):
            site = site._replace(filename=path.relative_to(FASTAPSP.parent).as_posix())
            found.setdefault(site.kind, []).append(f"{site} x{count}")
    return {kind: sorted(lines) for kind, lines in found.items()}


def _assert_no_operators(sites):
    found = _in_fastapsp(sites)
    bad = found.get("operator", []) + found.get("unknown", [])
    if bad:
        pytest.fail("operators between a (fake) CuPy array and a scalar on the GPU path; call them as functions, "
                    "xp.subtract(a, 1) (DEVELOPERS.md):\n  " + "\n  ".join(bad), pytrace=False)
    assert found.get("function"), "no call with a scalar was seen at all: is the recorder attached?"


# ------------------------------------------------------------------ the recorder itself
def _operators(a):
    a - 1
    3 - a
    a < 0
    a[0] == 1
    np.int64(2) * a


def _operator_in_a_condition(a):
    if a[0] < 0:  # 3.13 compiles a comparison before a jump as COMPARE_OP "bool(<)"
        pass


def _not_operators(xp, a):
    xp.subtract(a, 1)
    a -= 1
    a + a


def _lines(function, kind, sites):
    first = function.__code__.co_firstlineno
    return sorted((s.line - first, s.ufunc, s.op) for s in sites if s.function == function.__name__ and s.kind == kind)


def test_the_recorder_finds_operators_with_a_scalar_and_nothing_else(fake):
    a = fake.arange(5, dtype=fake.int64)
    assert type(a) is Arr and type(a[0]) is Arr and a[0].ndim == 0  # integer indexing: a 0-d array, as on CuPy
    assert type(a.sum()) is Arr and a.sum().ndim == 0 and type(fake.count_nonzero(a)) is Arr
    assert type(fake.asnumpy(a)) is np.ndarray and type(a.get()) is np.ndarray
    _operators(a)
    assert _lines(_operators, "operator", fake.sites) == [
        (1, "subtract.__call__", "-"), (2, "subtract.__call__", "-"), (3, "less.__call__", "<"),
        (4, "equal.__call__", "=="), (5, "multiply.__call__", "*")]
    assert sum(fake.sites.values()) == 5
    fake.sites.clear()
    _operator_in_a_condition(a)
    assert _lines(_operator_in_a_condition, "operator", fake.sites) == [(1, "less.__call__", "<")]
    fake.sites.clear()
    _not_operators(fake, a)
    assert not _lines(_not_operators, "operator", fake.sites)
    # Both were seen (with a scalar) and told apart; a + a has no scalar and is not looked at.
    assert [line[:2] for line in _lines(_not_operators, "function", fake.sites)] == [(1, "subtract.__call__")]
    assert _lines(_not_operators, "in-place", fake.sites) == [(2, "subtract.__call__", "-=")]
    assert sum(fake.sites.values()) == 2
    np.testing.assert_array_equal(a.get(), [-1, 0, 1, 2, 3])


def test_the_fake_is_gone_after_a_test():
    """After the test before: ``cupy`` and Jet's ``_launch`` are what they were."""
    assert not isinstance(sys.modules.get("cupy"), fake_cupy.FakeCupy)
    assert Arr.sites is None
    assert jet_module._launch.__module__ == "fastapsp.partition.jet"


# ------------------------------------------------------------------ the boundary refinement
CASES = [
    ("minnesota", 4, {}),  # the pairwise flows and the centroidal restart (on the host), then the cluster moves
    ("minnesota", 8, {"flow_passes": 0}),  # cluster moves only, at every level, from the METIS partition
    ("minnesota", 6, {"flow_passes": 0, "levels": 3, "cycles": 2}),  # clusters built again for a second pass
    ("grid", 3, {}),  # the centroidal restart runs (its flows win here)
    ("grid", 8, {"flow_passes": 0, "levels": 3, "patience": 0}),  # positive gains only
    ("grid", 10, {"flow_passes": 0, "levels": 2, "cycles": 3}),
]


@pytest.mark.parametrize("name,k,options", CASES, ids=[f"{c[0]}-k{c[1]}-{len(c[2])}opts" for c in CASES])
def test_refinement_on_cupy_has_no_operator_with_a_scalar(fake, name, k, options):
    """``refine_boundary`` on the fake CuPy: no operator with a scalar in fastapsp, NumPy's labels and stats."""
    pytest.importorskip("pymetis")
    from fastapsp.partition import partition_graph
    from fastapsp.partition.refine import boundary_count, refine_boundary

    graph = minnesota_case()[0] if name == "minnesota" else grid_case(40)[0]
    indptr, indices = graph.undirected_adjacency()
    labels = partition_graph(graph, k, "metis", seed=2).labels
    stats_np, stats_cp = {}, {}
    on_host = refine_boundary(indptr, indices, labels, k, imbalance=0.03, seed=5, workers=1, stats=stats_np,
                              **options)
    assert not fake.sites  # NumPy arrays only so far
    device = [fake.asarray(a) for a in (indptr, indices, labels)]
    on_device = refine_boundary(*device, k, imbalance=0.03, seed=5, workers=1, stats=stats_cp, **options)
    count = boundary_count(device[0], device[1], on_device)
    _assert_no_operators(fake.sites)
    assert type(on_device) is Arr
    assert on_device.dtype == on_host.dtype
    np.testing.assert_array_equal(on_device.get(), on_host)
    assert stats_np.pop("timings") and stats_cp.pop("timings")  # seconds: the rest must agree
    assert stats_np == stats_cp
    assert count == stats_np["boundary_after"] <= stats_np["boundary_before"]
    # The code under test ran: Jet's kernel path built the clusters and cluster moves were made.
    assert {"jet_propose", "jet_mutual", "jet_coarse_arcs"} <= set(fake.kernels.launched)
    assert stats_np["levels"] > 0 and stats_np["rounds"] > 0, f"no cluster moves to check: pick another case {stats_np}"


# ------------------------------------------------------------------ array helpers
def test_array_helpers_on_cupy_have_no_operator_with_a_scalar(fake):
    rng = np.random.default_rng(3)
    vertices = rng.integers(0, 1 << 31, 1000)
    values = rng.integers(0, 50, 2000)
    degree = rng.integers(0, 6, 300)
    indptr = np.concatenate([[0], np.cumsum(degree)])
    rows = rng.permutation(300)[:120]
    for salt in (0, 7, (1 << 40) + 3):
        got = _hash32(fake, fake.asarray(vertices), salt)
        assert type(got) is Arr
        np.testing.assert_array_equal(got.get(), _hash32(np, vertices, salt))
    got = count_values(fake, fake.asarray(values), 60)
    assert type(got) is Arr
    np.testing.assert_array_equal(got.get(), count_values(np, values, 60))
    got = arc_runs(fake, fake.asarray(indptr), fake.asarray(rows))
    for a, b in zip(got, arc_runs(np, indptr, rows)):
        assert type(a) is Arr
        np.testing.assert_array_equal(a.get(), b)
    _assert_no_operators(fake.sites)


# ------------------------------------------------------------------ Jet's array-op path
JET_CASES = [("minnesota", 4), ("minnesota", 16), ("grid", 7)]
JET_STEPS = {"_heavy_edge_matching", "_contract", "_connections", "_lp_candidates", "_lp_move", "_loss_bucket",
             "_rebalance_rows"}


@pytest.mark.parametrize("name,k", JET_CASES, ids=[f"{c[0]}-k{c[1]}" for c in JET_CASES])
def test_jet_array_path_on_cupy_has_no_operator_with_a_scalar(fake, name, k):
    """``jet_partition(kernels=False)`` on the fake CuPy: no operator with a scalar in fastapsp, NumPy's labels."""
    pytest.importorskip("pymetis")  # the coarsest graph is partitioned by METIS
    graph = minnesota_case()[0] if name == "minnesota" else grid_case(40)[0]
    indptr, indices = graph.undirected_adjacency()
    options = {"seed": 5, "imbalance": 0.03, "coarsest": max(4 * k, 60)}  # several levels of coarsening
    on_host = jet_module.jet_partition(indptr, indices, k, **options)
    assert not fake.sites  # NumPy arrays only so far
    on_device = jet_module.jet_partition(fake.asarray(indptr), fake.asarray(indices), k, kernels=False, **options)
    _assert_no_operators(fake.sites)
    assert type(on_device) is Arr
    assert on_device.dtype == on_host.dtype
    np.testing.assert_array_equal(on_device.get(), on_host)
    # The code under test ran on the fake: every step of the array-op path called a function with a scalar
    # (Jetr's rows included), and no kernel was launched.
    jet_py = Path(jet_module.__file__).resolve()
    assert JET_STEPS <= {site.function for site in fake.sites if Path(site.filename).resolve() == jet_py}
    assert not fake.kernels.launched


# ------------------------------------------------------------------ helpers without kernels: stages, statistics
# Helpers of the GPU path that run CuPy array operations only (no RawKernel, no get_kernel), called on the fake
# with the inputs of a run on minnesota (NumPy's stages made them); where the function picks a kernel first
# (assemble.cu, reduce_stats.cu, Floyd-Warshall), a stand-in says "not here", as it does on a GPU when the
# kernel does not apply, so that the array-op fallback runs.
@pytest.fixture(scope="module")
def stage_case():
    """Minnesota in 6 METIS components: its CSR, partition, and per component the NumPy stages' outputs."""
    pytest.importorskip("pymetis")
    from fastapsp.partition import partition_graph
    from fastapsp.stages import blocked_floyd_warshall, boundary_sssp, build_component_matrix, min_plus
    from fastapsp.stages.extract import extract_inner_to_boundary
    from fastapsp.stages.predecessors import boundary_predecessors

    graph = minnesota_case()[0]
    part = partition_graph(graph, 6, "metis", seed=2)
    csr = (graph.indptr, graph.indices, graph.weights)
    comps = []
    for p in range(part.k):
        vertices, nb = part.component(p)
        rows = boundary_sssp(*csr, vertices[:nb], dtype=np.float64)
        hops, pred = boundary_predecessors(*csr, vertices[:nb], rows)
        matrix = blocked_floyd_warshall(build_component_matrix(*csr, vertices, nb, rows))
        block = np.full((vertices.size, graph.n), np.inf)
        min_plus(extract_inner_to_boundary(matrix, nb), rows, out=block[nb:])
        comps.append(SimpleNamespace(vertices=vertices, nb=nb, rows=rows, hops=hops, pred=pred, matrix=matrix,
                                     block=block))
    return SimpleNamespace(graph=graph, part=part, csr=csr, comps=comps)


def _same(got, want):
    """``got`` is a fake device array holding NumPy's ``want`` (dtype and values)."""
    assert type(got) is Arr, type(got)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.get(), want)


def test_to_small_on_cupy_has_no_operator_with_a_scalar(fake):
    """``to_small`` (``--dtype uint16/uint8`` blocks at the sink): NumPy's values, and its range check refuses
    a distance at the sentinel on the device as on the host."""
    from fastapsp.errors import ConfigError
    from fastapsp.smalldist import to_small

    block = np.array([[0.0, 3.0, np.inf], [254.0, np.inf, 7.0]], dtype=np.float32)
    for dtype in ("uint8", "uint16"):
        _same(to_small(fake.asarray(block), dtype), to_small(block, dtype))
    with pytest.raises(ConfigError, match="255 does not fit uint8"):
        to_small(fake.asarray(block + 1), "uint8")
    _assert_no_operators(fake.sites)


@pytest.mark.parametrize("integer", [True, False])
def test_statistics_array_path_on_cupy_has_no_operator_with_a_scalar(fake, monkeypatch, stage_case, integer):
    """``StatsAccumulator`` on CuPy where the fused kernel does not apply (``_update_chunk``'s array ops: row
    blocks, pair blocks, blocks past a component) and ``finalize`` on the device (``_vertex_arrays``,
    ``_closeness``, the vertex reordering, ``_to_host``): the statistics of NumPy."""
    from fastapsp import reductions, reductions_gpu

    monkeypatch.setattr(reductions_gpu, "kernel_supports", lambda acc, block: False)
    monkeypatch.setattr(reductions, "_CHUNK_ELEMENTS", 1 << 16)  # several chunks a block
    graph, comp = stage_case.graph, stage_case.comps[0]
    n, scale = graph.n, 1.0 if integer else 0.37
    rows = comp.rows * scale  # whole numbers or not; the histogram doubles its width for the real ones
    first = (comp.block[comp.nb:comp.nb + 40] * scale)
    first[:, comp.vertices[comp.nb:comp.nb + 40]] = 0.0  # stands in for the assembled rows: a diagonal each
    width = 1.0 if integer else 1.0 / 64
    order = np.random.default_rng(4).permutation(n)

    def run(xp):
        acc = reductions.StatsAccumulator(n, xp=xp, integer=integer, directed=False, bin_width=width)
        acc.vertex_order = order
        acc.update(comp.vertices[comp.nb:comp.nb + 40], 0, xp.asarray(first))
        acc.update(xp.asarray(comp.vertices[:comp.nb]), 0, xp.asarray(rows))
        acc.update(np.arange(5, 25), 5, xp.asarray(first[:20, 5:]), pairs=True)
        acc.update_beyond(np.arange(3), 100, xp.asarray(first[:3, 100:]))
        return acc.finalize()

    on_host = run(np)
    on_device = run(fake)
    _assert_no_operators(fake.sites)
    assert on_device.scalars == on_host.scalars and on_device.histogram == on_host.histogram
    assert on_host.histogram["bin_width"] > width or integer  # the width doubled on the device too
    assert list(on_device.vertex) == list(on_host.vertex)
    for key, values in on_host.vertex.items():
        assert type(on_device.vertex[key]) is np.ndarray  # back on the host
        np.testing.assert_array_equal(on_device.vertex[key], values, err_msg=key)
    for n_ in (1, n):  # _closeness's one-vertex case too
        args = [fake.asarray(a) for a in (np.arange(n_) * 3, np.arange(n_), np.arange(n_))]
        got = reductions._vertex_arrays(fake, n_, *args, *args[1:], np.arange(n_, dtype=float), fake.zeros(n_))
        want = reductions._vertex_arrays(np, n_, *[a.get() for a in args], *[a.get() for a in args[1:]],
                                         np.arange(n_, dtype=float), np.zeros(n_))
        for key in want:
            np.testing.assert_array_equal(fake.asnumpy(got[key]), fake.asnumpy(want[key]), err_msg=key)
    _assert_no_operators(fake.sites)


@pytest.mark.parametrize("minimum", [False, True])
def test_assemble_fallback_on_cupy_has_no_operator_with_a_scalar(fake, monkeypatch, stage_case, minimum):
    """``assemble_row_block`` (column slices) and ``assemble_in_result`` where assemble.cu's kernels do not
    apply (they return False, as for strided rows): the array-op fallback, NumPy's blocks."""
    from fastapsp.stages import _cuda
    from fastapsp.stages.assemble import assemble_in_result, assemble_row_block

    monkeypatch.setattr(_cuda, "copy_rows_cuda", lambda dst, src: False)
    monkeypatch.setattr(_cuda, "assemble_interior_cuda", lambda *args, **kwargs: False)
    n = stage_case.graph.n
    for comp in stage_case.comps[:3]:
        for c0, w in ((0, n), (700, 900)):
            args = (comp.rows, comp.matrix, comp.vertices, comp.nb)
            want = assemble_row_block(comp.block[:, c0:c0 + w].copy(), *args, column_start=c0, minimum=minimum)
            got = assemble_row_block(fake.asarray(comp.block[:, c0:c0 + w]), *map(fake.asarray, args[:3]),
                                     comp.nb, column_start=c0, minimum=minimum)
            _same(got, want)
    comp = stage_case.comps[1]
    result = np.full((n, n), np.inf, dtype=np.float32)
    result[comp.vertices[comp.nb:]] = comp.block[comp.nb:]
    args = (comp.rows.astype(np.float32), comp.matrix.astype(np.float32), comp.vertices, comp.nb)
    want = assemble_in_result(result.copy(), *args, minimum=minimum)
    _same(assemble_in_result(fake.asarray(result), *map(fake.asarray, args[:3]), comp.nb, minimum=minimum), want)
    _assert_no_operators(fake.sites)


def test_predecessor_helpers_on_cupy_have_no_operator_with_a_scalar(fake, stage_case):
    """``component_predecessors`` and ``assemble_predecessors`` (array ops on CuPy, no kernel): NumPy's
    arcs and predecessors, for every component and a column slice."""
    from fastapsp.stages.predecessors import assemble_predecessors, component_predecessors

    csr, n = stage_case.csr, stage_case.graph.n
    for comp in stage_case.comps:
        want = component_predecessors(*csr, comp.vertices, comp.nb, comp.hops, comp.pred)
        got = component_predecessors(*map(fake.asarray, csr), fake.asarray(comp.vertices), comp.nb,
                                     fake.asarray(comp.hops), fake.asarray(comp.pred))
        for a, b in zip(got, want):
            _same(a, b)
        block = np.random.default_rng(1).integers(-1, n, (comp.vertices.size, n)).astype(np.int32)
        for c0, w in ((0, n), (500, 1200)):
            want_block = assemble_predecessors(block[:, c0:c0 + w].copy(), comp.pred, want[1], comp.vertices,
                                               comp.nb, column_start=c0)
            got_block = assemble_predecessors(fake.asarray(block[:, c0:c0 + w]), fake.asarray(comp.pred), got[1],
                                              fake.asarray(comp.vertices), comp.nb, column_start=c0)
            _same(got_block, want_block)
    _assert_no_operators(fake.sites)


def test_csr_helpers_on_cupy_have_no_operator_with_a_scalar(fake, stage_case):
    """``_csr``, ``_transpose`` (the pull SSSP's in-arcs) and ``_local_csr`` (the closure searches' local
    arcs) of fastapsp/stages/_cuda.py, array ops only: in-arcs by head in arc order (CuPy's argsort of the
    heads, stable here) and the local CSR made on the device equal to the one made on the host."""
    from fastapsp.stages import _cuda

    indptr, indices, weights = stage_case.csr
    n, part = stage_case.graph.n, stage_case.part
    dev = _cuda._csr(*map(fake.asarray, (indptr, indices, weights)))
    assert dev[0].dtype == dev[1].dtype and dev[2].dtype == np.float64
    tptr, tails, tw = _cuda._transpose(*dev)
    order = np.argsort(indices, kind="stable")
    _same(tptr, np.concatenate([[0], np.cumsum(np.bincount(indices, minlength=n))]).astype(dev[0].dtype))
    _same(tails, np.repeat(np.arange(n), np.diff(indptr)).astype(dev[0].dtype)[order])
    _same(tw, weights.astype(np.float64)[order])
    local_of = np.empty(n, dtype=np.int32)
    local_of[part.order] = np.arange(n) - part.starts[part.labels[part.order]]
    vertices = part.order[np.random.default_rng(2).permutation(n)[:900]]
    on_host = _cuda._local_csr((indptr, indices), dev[:2], part.labels, local_of, vertices, on_device=False)
    on_device = _cuda._local_csr((indptr, indices), dev[:2], part.labels, local_of, vertices, on_device=True)
    for a, b in zip(on_device, on_host):
        _same(a, b.get())
    _assert_no_operators(fake.sites)


@pytest.mark.parametrize("entries", [1, 1 << 22])
def test_super_group_closure_on_cupy_has_no_operator_with_a_scalar(fake, monkeypatch, entries):
    """``BoundaryGraph._close_supers`` and ``_place_cliques`` (every group alone, all at once) on CuPy, every
    super-group of every upper level, with Floyd-Warshall's kernels standing in from NumPy: NumPy's closures.

    The BoundaryGraph is built on NumPy; its levels' rows are copied to the fake to close them there."""
    import dataclasses

    from fastapsp.partition import partition_graph
    from fastapsp.stages import boundary_graph
    from fastapsp.stages.boundary_graph import BoundaryGraph, close_components, pack_boundary_rows

    pytest.importorskip("pymetis")
    monkeypatch.setattr(boundary_graph, "CLIQUE_ENTRIES", entries)
    graph = grid_case(24)[0]
    part = partition_graph(graph, 24, "metis", seed=2)
    closed = close_components(graph.indptr, graph.indices, graph.weights, part, range(part.k), dtype=np.float64)
    bg = BoundaryGraph(graph, part, pack_boundary_rows(closed, part), np, np.float64, dense_limit=20,
                       super_size=12)
    assert len(bg.tree.steps) >= 2
    fw = boundary_graph.blocked_floyd_warshall
    monkeypatch.setattr(boundary_graph, "blocked_floyd_warshall", lambda m: fw(m.view(np.ndarray)).view(Arr))
    batches = []  # the device path closes its matrices in batches (close_many's kernels)
    monkeypatch.setattr(boundary_graph, "close_many",
                        lambda ms: batches.append([fw(m.view(np.ndarray)).shape[0] for m in ms]))
    on_device = object.__new__(BoundaryGraph)
    on_device.__dict__.update(bg.__dict__, xp=fake)
    closures = 0
    for lev, step in zip(bg.levels, bg.tree.steps):
        lev_dev = dataclasses.replace(lev, lb=fake.asarray(lev.lb), inner={}, _device={})
        supers = np.arange(step.starts.size - 1)
        got, want = on_device._close_supers(lev_dev, supers, step), bg._close_supers(lev, supers, step)
        assert sorted(got) == sorted(want) == supers.tolist()
        for s in supers.tolist():
            _same(got[s], want[s])
            closures += 1
    assert closures > 2
    assert sum(len(b) for b in batches) == closures  # every matrix closed once, in batches
    _assert_no_operators(fake.sites)
    assert ("BoundaryGraph._place_cliques" in {site.function for site in fake.sites}) == (entries > 1)  # its gather
