"""--dry-run sizes, the up-front refusal of an output that cannot fit, and --quiet / progress."""

import io
import json

import numpy as np
import pytest

import fastapsp.sizing as sizing
from cli_util import DATA, run_cli
from fastapsp.errors import ConfigError
from fastapsp.progress import Progress, make_progress

MINNESOTA = DATA / "minnesota.mtx.gz"


def test_dry_run_prints_sizes_and_writes_nothing(tmp_path):
    out, report = tmp_path / "d.npy", tmp_path / "r.json"
    proc = run_cli("solve", MINNESOTA, "-k", 4, "--backend", "numpy", "--output", out, "--dry-run",
                   "--report", report)
    assert proc.returncode == 0, proc.stderr
    assert not out.exists()
    data = json.loads(report.read_text())
    assert data["output_bytes"] == 2642 * 2642 * 4
    (rank,) = data["dry_run"]
    assert rank["rows"] == 2642 and rank["estimated_seconds"] > 0
    # the largest component's matrix and its boundary rows are counted in Floyd-Warshall
    stages = rank["device_bytes_per_stage"]
    assert stages["floyd_warshall"] >= stages["sssp"] and stages["min_plus"] >= stages["extract"]
    assert "rank 0: 2642 rows" in proc.stdout


def test_stage_memory_formula():
    m = sizing.stage_memory(c=10, b=4, n=100, itemsize=4, width=50)
    assert m["sssp"] == 4 * 100 * 4
    assert m["floyd_warshall"] == 4 * 100 * 4 + 10 * 10 * 4
    assert m["min_plus"] == 4 * 100 * 4 + 10 * 10 * 4 + 6 * 4 * 4 + 10 * 50 * 4


def test_output_that_does_not_fit_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(sizing, "_host_available", lambda: 1000)
    with pytest.raises(ConfigError, match="memory needs"):
        sizing.check_output_fits("memory", 100, 100, "float32")
    assert sizing.check_output_fits("memory", 10, 10, "float32") == 400

    class Usage:
        free = 5000

    monkeypatch.setattr(sizing.shutil, "disk_usage", lambda folder: Usage)
    with pytest.raises(ConfigError, match="GiB free"):
        sizing.check_output_fits(str(tmp_path / "d.npy"), 100, 100, "float32")
    assert sizing.check_output_fits(str(tmp_path / "d.npy"), 10, 10, "float64") == 800
    assert sizing.check_output_fits("none", 10**6, 10**6, "float64") == 8 * 10**12


def test_progress_counts_rows_and_components():
    stream = io.StringIO()
    bar = Progress([3, 2], 10, file=stream)
    bar(np.arange(3), 0, np.zeros((3, 5)))
    assert bar.done == 1.5
    bar(np.arange(3), 5, np.zeros((3, 5)))
    bar(np.arange(2), 0, np.zeros((2, 10)))
    assert bar.done == 5
    bar.close()
    assert "components 2/2" in stream.getvalue()
    assert make_progress([3], 10, rank=0, quiet=False, stream=io.StringIO()) is None  # not a terminal
    assert make_progress([3], 10, rank=0, quiet=True) is None


def test_quiet_prints_nothing():
    proc = run_cli("solve", MINNESOTA, "-k", 2, "--backend", "numpy", "--quiet")
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == ""


def test_dry_run_models_the_batch_the_method_and_the_extras():
    """What a run holds besides one component: the SSSP batch, the CSR, a second block, --stats, --predecessors."""
    from fastapsp.io import read_graph
    from fastapsp.partition import partition_graph

    graph = read_graph(MINNESOTA)
    part = partition_graph(graph, 4, "metis")
    n = graph.n
    plan = [list(range(part.k))]

    def run(**kw):
        settings = dict(dtype="float32", backend="cupy", output="none", rows=n, method="frontier", available=1 << 40)
        settings.update(kw)
        (rank,) = sizing.dry_run(graph, part, plan, **settings)
        return rank["device_bytes_per_stage"], rank

    base, rank = run()
    csr = graph.indptr.nbytes + graph.indices.nbytes + graph.weights.nbytes
    all_rows = int(part.boundary_per_part.sum()) * n * 4
    assert base["csr"] == csr
    assert base["sssp"] > csr + all_rows  # every component in one batch, and the SSSP's own buffers
    c = int(part.sizes.max())
    assert base["floyd_warshall"] >= csr + all_rows + c * c * 4
    assert rank["device_peak_bytes"] == max(base.values())
    one_each, _ = run(available=4 * int(part.boundary_per_part.max()) * n * 4)  # a batch holds one component
    assert one_each["floyd_warshall"] < base["floyd_warshall"]
    stats, _ = run(stats=True)  # the previous block stays while --stats reduces it on its own stream
    assert stats["min_plus"] - base["min_plus"] >= min(c * n * 4, base["min_plus"] - base["extract"])
    preds, _ = run(predecessors=True)
    assert preds["floyd_warshall"] - base["floyd_warshall"] >= 8 * c * c
    bg, _ = run(method="boundary-graph")
    assert bg["sssp"] == 0 and bg["local_fw"] > csr and bg["boundary_rows"] > 0 and bg["floyd_warshall"] == 0
    host, numpy_run = run(output="memory", backend="numpy")[1]["host_bytes"], run(backend="numpy")[0]
    assert host == n * n * 4 and numpy_run["csr"] == 0


def _traced_peak(run) -> int:
    """Bytes NumPy allocates at most while ``run()`` goes (a first call fills import and graph caches)."""
    import tracemalloc

    run()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        run()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("method", ["sssp", "frontier", "boundary-graph"])
def test_sources_estimate_matches_numpy_allocations(method):
    """On the NumPy path the stages' arrays are host arrays: the dry run's sum matches what is allocated."""
    from fastapsp.io import read_graph
    from fastapsp.partition import partition_graph
    from fastapsp.execute import _positions
    from fastapsp.components import run_components
    from fastapsp.sink import MemorySink
    from fastapsp.components import run_sssp_rows
    from fastapsp.sources import RowSubsetSink, SourceRows, parse_sources

    graph = read_graph(MINNESOTA)
    ids = parse_sources("random:200:1", graph.n)
    part = partition_graph(graph, 8, "metis")
    selection = SourceRows(part, ids)

    def run():
        memory = MemorySink(graph.n, np.float32, rows=ids.size)
        sink = RowSubsetSink(memory, _positions(ids, graph.n))
        if method == "sssp":
            run_sssp_rows(graph, ids, backend="numpy", sink=sink, dtype=np.float32)
        else:
            run_components(graph, part, range(part.k), backend="numpy", sink=sink, dtype=np.float32, rows=selection,
                           boundary_rows=method)

    settings = dict(dtype="float32", backend="numpy", output="memory", available=1 << 40)
    if method == "sssp":
        (rank,) = sizing.sssp_memory(graph, [ids.size], **settings)
    else:
        plan = [[p for p in range(part.k) if selection.per_component[p]]]
        (rank,) = sizing.dry_run(graph, part, plan, rows=ids.size, method=method, wanted=selection.per_component,
                                 interior=selection.interior_per_component, keep=selection.closures_needed(),
                                 closing=[list(range(part.k))], **settings)
    estimate = rank["device_peak_bytes"] + rank["host_bytes"]
    assert 0.75 <= _traced_peak(run) / estimate <= 1.25


def test_sssp_memory_follows_the_batches():
    from fastapsp.io import read_graph

    graph = read_graph(MINNESOTA)
    n = graph.n
    (host,) = sizing.sssp_memory(graph, [100], dtype="float32", backend="numpy", output="memory",
                                 block_bytes=30 * n * 4)
    assert host["batch"] == 30 and host["device_peak_bytes"] == 30 * n * (4 + 8)  # rows and SciPy's float64
    assert host["host_bytes"] == 100 * n * 4
    csr = graph.indptr.nbytes + graph.indices.nbytes + graph.weights.nbytes
    gpu = sizing.sssp_memory(graph, [100, 3], dtype="float32", backend="cupy", output="memory",
                             available=4 * 50 * n * 4)
    assert [r["batch"] for r in gpu] == [50, 3]
    assert gpu[0]["device_peak_bytes"] == csr + 50 * n * 4 + sizing._sssp_buffers(n, 50, 4, graph.unit_weights)
    # the output and two pinned buffers, each a power of two holding the 50-row batch
    assert gpu[0]["host_bytes"] == 100 * n * 4 + 2 * 4 * (1 << (50 * n - 1).bit_length())
    assert sizing.sssp_memory(graph, [100], dtype="float32", backend="cupy", output="none")[0]["host_bytes"] == 0


def test_dry_run_of_sources_by_sssp_needs_no_partition(tmp_path):
    report = tmp_path / "r.json"
    proc = run_cli("solve", MINNESOTA, "--backend", "numpy", "--sources", "random:5", "--output", "memory",
                   "--dry-run", "--report", report)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(report.read_text())
    assert data["sources_method"] == "sssp" and data["partitioner"] == "none"
    (rank,) = data["dry_run"]
    assert rank["rows"] == 5 and rank["device_peak_bytes"] == 5 * 2642 * (4 + 8)
    assert rank["host_bytes"] == data["output_bytes"] == 5 * 2642 * 4


def test_dry_run_of_sources_keeps_only_the_closures_used():
    """Boundary-graph method with --sources: only components with a wanted interior row keep their closure."""
    from fastapsp.io import read_graph
    from fastapsp.partition import partition_graph
    from fastapsp.sources import SourceRows
    from fastapsp.stages.boundary_graph import closure_batch_limit

    graph = read_graph(MINNESOTA)
    part = partition_graph(graph, 8, "metis")
    selection = SourceRows(part, np.flatnonzero(~part.boundary)[:1])  # one interior vertex
    plan = [[p for p in range(part.k) if selection.per_component[p]]]
    settings = dict(dtype="float32", backend="cupy", output="memory", rows=1, method="boundary-graph",
                    available=1 << 40, wanted=selection.per_component, closing=[list(range(part.k))],
                    interior=selection.interior_per_component)
    (every,) = sizing.dry_run(graph, part, plan, **settings)
    (used,) = sizing.dry_run(graph, part, plan, keep=selection.closures_needed(), **settings)
    sizes, nbs = part.sizes.astype(np.int64), part.boundary_per_part.astype(np.int64)
    dropped = sum(int(sizes[p]) ** 2 - int(nbs[p] * sizes[p]) for p in range(part.k) if p not in plan[0]) * 4
    # the closures not kept are still made, a batch at a time: the larger of the largest matrix and one batch
    unkept = sum(int(sizes[p]) ** 2 for p in range(part.k) if p not in plan[0]) * 4
    largest = int(sizes.max()) ** 2 * 4
    in_flight = max(largest, min(closure_batch_limit((1 << 40) // 3), unkept))
    assert every["device_bytes_per_stage"]["local_fw"] - used["device_bytes_per_stage"]["local_fw"] == \
        dropped - (in_flight - largest)
