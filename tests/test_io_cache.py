"""The binary graph cache: the first read of a large text writes it, later reads read it; a stale, damaged or
other-settings cache is never used; results are those of the parsed graph."""

import os
import time

import numpy as np
import pytest
from cli_util import run_cli
from conftest import random_graph

import fastapsp
import fastapsp.io.cache as cache_module
from fastapsp.io import read_graph


def _write_mtx(path, graph):
    src, dst, w = graph.arcs()
    with open(path, "w") as fh:
        fh.write("%%MatrixMarket matrix coordinate real general\n")
        fh.write(f"{graph.n} {graph.n} {src.size}\n")
        fh.writelines(f"{a + 1} {b + 1} {c:g}\n" for a, b, c in zip(src, dst, w))


@pytest.fixture
def graph_file(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_module, "CACHE_FROM_BYTES", 0)  # small files are cached too, here
    graph = random_graph(np.random.default_rng(3), 300, 1200, directed=True, weighted=True)
    path = tmp_path / "g.mtx"
    _write_mtx(path, graph)
    return path


def _same(a, b):
    return (a.n, a.directed, a.name) == (b.n, b.directed, b.name) and a.checksum() == b.checksum()


def test_the_second_read_maps_the_cache_and_solves_the_same(graph_file):
    parsed = read_graph(graph_file)
    first = read_graph(graph_file, cache="auto")
    folder = graph_file.with_name("g.mtx.mtx.fastapsp-csr")
    assert folder.is_dir() and sorted(p.name for p in folder.iterdir()) == [
        "indices.npy", "indptr.npy", "meta.json", "weights.npy"]
    mapped = read_graph(graph_file, cache="auto")
    assert not mapped.indices.flags.writeable and _same(mapped, parsed) and _same(first, parsed)
    want = fastapsp.solve(parsed, k=3, backend="numpy")
    np.testing.assert_array_equal(fastapsp.solve(mapped, k=3, backend="numpy"), want)


def test_a_changed_file_is_read_again_and_its_cache_rewritten(graph_file):
    read_graph(graph_file, cache="auto")
    other = random_graph(np.random.default_rng(4), 300, 1100, directed=True, weighted=True)
    time.sleep(0.01)
    _write_mtx(graph_file, other)
    got = read_graph(graph_file, cache="auto")
    assert got.indices.flags.writeable and _same(got, read_graph(graph_file))
    assert not read_graph(graph_file, cache="auto").indices.flags.writeable  # the new cache


def test_a_damaged_cache_is_ignored(graph_file):
    read_graph(graph_file, cache="auto")
    weights = graph_file.with_name("g.mtx.mtx.fastapsp-csr") / "weights.npy"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF  # one bit pattern of the last weight changed
    weights.write_bytes(bytes(data))
    got = read_graph(graph_file, cache="auto")
    assert got.indices.flags.writeable and _same(got, read_graph(graph_file))


def test_settings_folders_and_none(graph_file, tmp_path):
    read_graph(graph_file, cache="none")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.mtx"]
    elsewhere = tmp_path / "caches"
    elsewhere.mkdir()
    read_graph(graph_file, cache=str(elsewhere))
    read_graph(graph_file, cache=str(elsewhere), undirected=True)
    assert sorted(p.name for p in elsewhere.iterdir()) == ["g.mtx.mtx-undirected.fastapsp-csr",
                                                          "g.mtx.mtx.fastapsp-csr"]
    undirected = read_graph(graph_file, cache=str(elsewhere), undirected=True)
    assert not undirected.indices.flags.writeable and _same(undirected, read_graph(graph_file, undirected=True))


def test_a_place_that_cannot_be_written_is_skipped(graph_file, tmp_path):
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("")
    got = read_graph(graph_file, cache=str(not_a_folder))
    assert _same(got, read_graph(graph_file)) and not_a_folder.read_text() == ""


def test_the_cli_writes_and_uses_a_cache_for_a_large_text(tmp_path):
    graph = random_graph(np.random.default_rng(5), 50_000, 700_000, directed=True, weighted=True)
    path = tmp_path / "big.mtx"
    _write_mtx(path, graph)
    assert path.stat().st_size >= cache_module.CACHE_FROM_BYTES
    folder = tmp_path / "cache"
    folder.mkdir()
    for _ in range(2):
        proc = run_cli("solve", path, "-k", 4, "--backend", "numpy", "--dry-run", "--graph-cache", folder)
        assert proc.returncode == 0, proc.stderr
    assert (folder / "big.mtx.mtx.fastapsp-csr" / "meta.json").is_file()
    proc = run_cli("solve", path, "--graph-cache", tmp_path / "nowhere", "--dry-run")
    assert proc.returncode != 0 and "graph_cache" in proc.stderr and "Traceback" not in proc.stderr


def test_a_pattern_files_cache_keeps_no_weights(tmp_path, monkeypatch):
    """Every arc weighs 1: the cache holds no weights array (8 bytes an arc less to read and check), and its
    graph is the parsed one, its unit weights known."""
    monkeypatch.setattr(cache_module, "CACHE_FROM_BYTES", 0)
    graph = random_graph(np.random.default_rng(6), 300, 1200, directed=False, weighted=False)
    src, dst, _ = graph.arcs()
    path = tmp_path / "p.mtx"
    path.write_text("%%MatrixMarket matrix coordinate pattern general\n"
                    f"{graph.n} {graph.n} {src.size}\n" + "".join(f"{a + 1} {b + 1}\n" for a, b in zip(src, dst)))
    parsed = read_graph(path, cache="auto")
    folder = tmp_path / "p.mtx.mtx.fastapsp-csr"
    assert sorted(p.name for p in folder.iterdir()) == ["indices.npy", "indptr.npy", "meta.json"]
    cached = read_graph(path, cache="auto")
    assert not cached.indices.flags.writeable and _same(cached, parsed) and cached._cache.get("unit") is True
    np.testing.assert_array_equal(cached.weights, parsed.weights)
