"""Saved partitions are checked like outputs: a JSON sidecar ties them to the graph, n and k.

``save_partition`` (``solve --partition-file``, ``partition --output``) writes
``PATH.json`` beside the file; ``load_partition`` refuses a partition of another
graph, n or k before any work, with one line naming the file, what it found and
what it expected.  A user's label file without a sidecar is accepted once its
labels are checked, with a one-line note.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import fastapsp
from cli_util import DATA, run_cli
from fastapsp.errors import PartitionError
from fastapsp.graph import Graph
from fastapsp.io import read_graph
from fastapsp.partition import graph_fingerprint, load_partition, partition_graph, save_partition
from fastapsp.sink import sidecar_path

MINNESOTA = DATA / "minnesota.mtx.gz"


@pytest.fixture(scope="module")
def graph():
    return read_graph(MINNESOTA)


@pytest.fixture(scope="module")
def part(graph):
    return partition_graph(graph, 4, seed=7)


def one_error_line(proc) -> str:
    assert proc.returncode != 0, proc.stdout
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    return lines[0]


def nothing_written(folder: Path) -> bool:
    return not list(folder.glob("d.npy*")) and not list(folder.glob("*.tmp*"))


# --------------------------------------------------------------------- API
@pytest.mark.parametrize("name", ["p.npz", "p.npy"])
def test_saved_partition_has_a_sidecar_and_loads_back(tmp_path, graph, part, name):
    path = tmp_path / name
    save_partition(path, graph, part)
    record = json.loads(Path(sidecar_path(path)).read_text())
    assert record["kind"] == "partition" and record["graph_checksum"] == graph.checksum()
    assert record["structure_checksum"] == graph_fingerprint(graph)
    assert (record["n"], record["m"], record["directed"], record["k"]) == (graph.n, graph.num_edges, False, 4)
    assert (record["partitioner"], record["seed"], record["imbalance_allowed"]) == ("metis", 7, 0.03)
    metrics = part.metrics()
    assert record["boundary_vertices"] == metrics["boundary_vertices"]
    assert record["imbalance"] == metrics["imbalance"] and record["edge_cut"] == metrics["edge_cut"]
    assert record["version"] == fastapsp.__version__ and record["bytes"] == path.stat().st_size
    notes = []
    loaded = load_partition(path, graph, 4, log=notes.append)
    np.testing.assert_array_equal(loaded.labels, part.labels)
    assert (loaded.method, loaded.seed, loaded.imbalance) == ("metis", 7, 0.03)  # also for labels-only .npy
    assert notes == [] and not list(tmp_path.glob("*.tmp*"))


def test_partition_of_another_graph_is_refused(tmp_path, graph, part):
    path = tmp_path / "p.npz"
    save_partition(path, graph, part)
    src, dst, w = graph.arcs()
    rewired = Graph.from_edges(graph.n, src, (dst + 1) % graph.n, w, directed=False, name="rewired")  # same n
    with pytest.raises(PartitionError, match="another graph") as info:
        load_partition(path, rewired)
    message = str(info.value)
    assert str(path) in message and "'minnesota.mtx.gz'" in message and "'rewired'" in message
    assert graph_fingerprint(graph) in message and graph_fingerprint(rewired) in message


def test_partition_of_another_n_is_refused(tmp_path, graph, part):
    path = tmp_path / "p.npy"
    save_partition(path, graph, part)
    small = Graph.from_edges(10, [0, 1], [1, 2], directed=False, name="small")
    with pytest.raises(PartitionError, match=r"n=2642.*expected 'small' with n=10") as info:
        load_partition(path, small)
    assert str(path) in str(info.value)


def test_partition_with_another_k_is_refused(tmp_path, graph, part):
    path = tmp_path / "p.npy"
    save_partition(path, graph, part)
    with pytest.raises(PartitionError, match=r"partition has k=4 .*asks for k=5"):
        load_partition(path, graph, 5)


def test_other_weights_same_structure_fit(tmp_path, graph, part):
    # Partitioners see arcs only: a partition made for road distances fits travel times.
    path = tmp_path / "p.npz"
    save_partition(path, graph, part)
    src, dst, w = graph.arcs()
    slower = Graph.from_edges(graph.n, src, dst, w * 3 + 1, directed=False, name="slower")
    assert slower.checksum() != graph.checksum()
    np.testing.assert_array_equal(load_partition(path, slower, 4).labels, part.labels)


def test_partial_or_replaced_file_is_refused(tmp_path, graph, part):
    path = tmp_path / "p.npy"
    save_partition(path, graph, part)
    data = path.read_bytes()
    path.write_bytes(data[:-100])  # cut short
    with pytest.raises(PartitionError, match="partial or replaced"):
        load_partition(path, graph)
    np.save(path, np.roll(part.labels, 1))  # same size, other labels
    with pytest.raises(PartitionError, match="do not match"):
        load_partition(path, graph)
    Path(sidecar_path(path)).write_text("{not json")
    with pytest.raises(PartitionError, match="p.npy.json"):
        load_partition(path, graph)


def test_labels_without_sidecar_are_checked_and_noted(tmp_path, graph, part):
    path = tmp_path / "mine.npy"
    np.save(path, part.labels.astype(np.int64))
    notes = []
    loaded = load_partition(path, graph, log=notes.append)
    assert loaded.k == 4 and loaded.method == "file"
    assert len(notes) == 1 and "mine.npy has no sidecar" in notes[0] and "2642 labels" in notes[0]
    np.save(path, part.labels[:-1])
    with pytest.raises(PartitionError, match="2641 labels for a graph of 2642 vertices"):
        load_partition(path, graph)
    np.save(path, part.labels)
    with pytest.raises(PartitionError, match=r"label 3 is outside 0\.\.2"):
        load_partition(path, graph, 3)


def test_labels_without_sidecar_must_use_every_label_unless_k_is_given(tmp_path, graph, part):
    path = tmp_path / "mine.npy"
    np.save(path, part.labels + 1)  # 1-based: label 0 unused
    with pytest.raises(PartitionError, match="1-based"):
        load_partition(path, graph)
    gap = np.where(part.labels == 2, 3, part.labels)  # component 2 empty
    np.save(path, gap)
    with pytest.raises(PartitionError, match=r"leave 1 component\(s\) empty, the first 2"):
        load_partition(path, graph)
    loaded = load_partition(path, graph, 4)  # k given: empty components allowed
    assert loaded.k == 4 and loaded.sizes[2] == 0
    np.save(path, np.array([0, 5_000_000_000] + [0] * (graph.n - 2)))
    with pytest.raises(PartitionError, match="5000000001 components"):
        load_partition(path, graph)


# --------------------------------------------------------------------- CLI
def test_cli_partition_output_has_a_sidecar_that_solve_checks(tmp_path):
    labels = tmp_path / "parts.npy"
    assert run_cli("partition", MINNESOTA, "-k", 3, "--seed", 5, "--output", labels).returncode == 0
    record = json.loads(Path(sidecar_path(labels)).read_text())
    assert record["k"] == 3 and record["seed"] == 5 and record["n"] == 2642
    report = tmp_path / "r.json"
    proc = run_cli("solve", MINNESOTA, "--partition-file", labels, "--report", report, "--backend", "numpy")
    assert proc.returncode == 0 and "note" not in proc.stderr, proc.stderr
    data = json.loads(report.read_text())
    assert (data["k"], data["partitioner"], data["seed"]) == (3, "metis", 5)
    other = tmp_path / "other.mtx"  # its weights call for float64: that note must not come before the refusal
    other.write_text("%%MatrixMarket matrix coordinate integer symmetric\n4 4 2\n2 1 16777216\n4 3 1\n")
    line = one_error_line(run_cli("solve", other, "--partition-file", labels, "--output", tmp_path / "d.npy"))
    assert str(labels) in line and "another graph" in line and "n=2642" in line and "n=4" in line
    assert nothing_written(tmp_path)


def test_cli_partition_file_with_another_k_fails_before_any_work(tmp_path):
    pfile = tmp_path / "p.npz"
    assert run_cli("solve", MINNESOTA, "-k", 4, "--partition-file", pfile, "--backend", "numpy").returncode == 0
    assert Path(sidecar_path(pfile)).is_file()
    line = one_error_line(run_cli("solve", MINNESOTA, "-k", 5, "--partition-file", pfile,
                                  "--output", tmp_path / "d.npy"))
    assert str(pfile) in line and "k=4" in line and "k=5" in line
    assert nothing_written(tmp_path)


def test_cli_user_labels_get_a_note_or_a_clean_refusal(tmp_path, graph, part):
    labels = tmp_path / "mine.npy"
    np.save(labels, part.labels)
    out = tmp_path / "d.npy"
    proc = run_cli("solve", MINNESOTA, "--partition-file", labels, "--output", out, "--backend", "numpy")
    assert proc.returncode == 0, proc.stderr
    notes = [line for line in proc.stderr.splitlines() if line.startswith("fastapsp: note")]
    assert len(notes) == 1 and "mine.npy has no sidecar" in notes[0], proc.stderr
    np.save(labels, part.labels + 1)
    out.unlink()
    Path(sidecar_path(out)).unlink()
    line = one_error_line(run_cli("solve", MINNESOTA, "--partition-file", labels, "--output", out))
    assert "mine.npy" in line and "1-based" in line and "-k 5" in line
    assert nothing_written(tmp_path)
