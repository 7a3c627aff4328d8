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
from fastapsp.graph import arc_runs, count_values
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
                                rows=jet_module._rows(np, indptr, indices.shape[0]))
        return jet_module._heaviest_neighbour(np, level, allowed, int(salt), kernels=False)

    def jet_heaviest_neighbour(self, indptr, indices, weights, allowed, salt, n, best):
        best[:] = self._heaviest(indptr, indices, weights, allowed, salt)

    def jet_propose(self, indptr, indices, weights, vweights, mate, go, cap, salt, n, want):
        if go[0] == 0:
            want[:] = -1
            return
        rows = jet_module._rows(np, indptr, indices.shape[0])
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
