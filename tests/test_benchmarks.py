"""The benchmark suite on the CPU: the family runner and its records, the first-contact script, the dry
mode of the device scripts, and the generated part of benchmarks/README.md."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from conftest import DATA

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "benchmarks"
sys.path.insert(0, str(BENCH))

import family  # noqa: E402
import readme_table  # noqa: E402


def needs_libraries():
    pytest.importorskip("pymetis")
    pytest.importorskip("yaml")


def run(cmd, env=None, timeout=300):
    return subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=timeout,
                          env={**os.environ, **(env or {})})


# ------------------------------------------------------------ README.md's generated part
def test_readme_generated_part_is_current():
    proc = run([sys.executable, str(BENCH / "readme_table.py"), "--check"])
    assert proc.returncode == 0, proc.stderr


def test_readme_check_notices_a_hand_edit(tmp_path, monkeypatch):
    text = readme_table.README.read_text()
    edited = text.replace("| luxembourg_osm | `solve->cupy` |", "| luxembourg_osm | `solve->cupy (edited)` |")
    assert edited != text
    copy = tmp_path / "README.md"
    copy.write_text(edited)
    monkeypatch.setattr(readme_table, "README", copy)
    assert readme_table.main(["--check"]) == 1
    assert readme_table.main([]) == 0  # rewritten: the hand edit is gone
    assert copy.read_text() == text


def test_readme_without_markers_is_refused(tmp_path, monkeypatch):
    copy = tmp_path / "README.md"
    copy.write_text("# Benchmarks\n")
    monkeypatch.setattr(readme_table, "README", copy)
    assert readme_table.main(["--check"]) == 2


# ------------------------------------------------------------ the family's measures
def test_rates_by_hand():
    report = {"n": 10, "boundary_vertices": 4, "sssp_method": "boundary-graph",
              "stages": {"min_plus": 2.0, "boundary_rows": 0.5, "sssp": 0.0}}
    sizes = (np.array([3, 3]), np.array([2, 2]))  # two components of 5 vertices, 2 on the boundary each
    r = family.rates(report, sizes)
    assert r["min_plus_gdist_per_s"] == pytest.approx(6 * 10 / 2.0 / 1e9)
    assert r["boundary_rows_gdist_per_s"] == pytest.approx(4 * 10 / 0.5 / 1e9)
    assert r["boundary_rows_stage"] == "boundary_rows"
    assert r["min_plus_relaxations"] == 120.0  # (3*2 + 3*2) * 10
    assert r["min_plus_trelax_per_s"] == pytest.approx(120 / 2.0 / 1e12)
    frontier = family.rates({**report, "sssp_method": "frontier", "stages": {"min_plus": 0.0, "sssp": 4.0}}, None)
    assert frontier["boundary_rows_stage"] == "sssp"
    assert frontier["boundary_rows_gdist_per_s"] == pytest.approx(4 * 10 / 4.0 / 1e9)
    assert frontier["min_plus_gdist_per_s"] is None and frontier["min_plus_trelax_per_s"] is None


@pytest.mark.parametrize("report, seconds", [
    ({"stages": {"read": 1.0}}, None),
    ({"compile_seconds": 1.5, "stages": {}}, 1.5),
    ({"compile": 2.5, "stages": {}}, 2.5),
    ({"stages": {"compile": 0.25}}, 0.25),
    ({"compile": {"seconds": 3.0, "variants": 40}}, 3.0),
    ({"compile": "built"}, None),
])
def test_compile_seconds(report, seconds):
    assert family.compile_seconds(report) == seconds


def test_component_sizes_match_the_graph(tmp_path):
    """Interior and boundary counts per component, against a boundary found here from the file itself."""
    needs_libraries()
    from fastapsp.io import read_graph
    from fastapsp.partition import make_partition, save_partition

    path = DATA / "minnesota.mtx.gz"
    graph = read_graph(path)
    k = 5
    labels = (np.arange(graph.n) * k // graph.n).astype(np.int32)  # contiguous blocks of vertex ids
    part = make_partition(graph, labels, k, method="by-hand", seed=0, imbalance=0.0, seconds=0.0)
    save_partition(tmp_path / "p.npz", graph, part)
    entry = family.FamilyGraph("minnesota", path, str(path), None, k, "metis")
    interior, boundary = family.component_sizes(entry, tmp_path / "p.npz", k)

    a = sp.coo_matrix(scipy.io.mmread(str(path)))
    crossing = labels[a.row] != labels[a.col]
    on_boundary = np.zeros(graph.n, bool)
    on_boundary[a.row[crossing]] = on_boundary[a.col[crossing]] = True
    expect_b = np.bincount(labels[on_boundary], minlength=k)
    expect_i = np.bincount(labels, minlength=k) - expect_b
    np.testing.assert_array_equal(boundary, expect_b)
    np.testing.assert_array_equal(interior, expect_i)


# ------------------------------------------------------------ the runner, kind family
def test_family_errors_name_the_key(tmp_path):
    needs_libraries()
    cases = {
        "kind: family\ngraphs: [tests/data/minnesota.mtx.gz]\nrepeats: 2\n": "unknown key 'repeats'",
        "kind: family\ngraphs:\n  - {path: x.mtx, make: scripts/make_grid_road.py}\n": "make: expected a list",
        "kind: family\ngraphs: [tests/data/minnesota.mtx.gz]\nk: 0\n": "k: 0 is not 'auto'",
        "kind: family\ngraphs: [tests/data/minnesota.mtx.gz]\npartitioner: nope\n": "partitioner: 'nope'",
        "kind: famly\ngraphs: [tests/data/minnesota.mtx.gz]\n": "kind: 'famly' is not one of",
    }
    for text, message in cases.items():
        exp = tmp_path / "bad.yaml"
        exp.write_text(text)
        proc = run([sys.executable, str(BENCH / "compare.py"), str(exp), "--out", str(tmp_path / "out")])
        assert proc.returncode == 2, (text, proc.stderr)
        assert message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_family_refuses_the_partitioner_flags(tmp_path):
    needs_libraries()
    proc = run([sys.executable, str(BENCH / "compare.py"), str(BENCH / "experiments" / "family_dry.yaml"),
                "--out", str(tmp_path), "--partition-only"])
    assert proc.returncode == 2
    assert "--partition-only: not for an experiment of kind family" in proc.stderr


def test_family_yaml_is_valid():
    needs_libraries()
    from compare_experiment import load_experiment

    exp = load_experiment(BENCH / "experiments" / "family.yaml")
    assert isinstance(exp, family.Family)
    names = [g.name for g in exp.graphs + exp.missing]
    for wanted in ("roadNY", "roadBAY", "roadFLA", "del18-euclid", "del18-euclid-directed", "grid512-unit"):
        assert wanted in names
    made = {g.name: g.make for g in exp.graphs if g.make}
    assert "--directed" in made["del18-euclid-directed"]
    for g in exp.graphs:  # every maker is a script of this repository
        if g.make:
            assert (REPO / g.make[0]).is_file(), g.make


def test_family_dry_run_of_the_device_script(tmp_path):
    needs_libraries()
    results, out = tmp_path / "results", tmp_path / "out"
    proc = run(["bash", str(BENCH / "device" / "family.sh")],
                env={"DRY": "1", "PYTHON": sys.executable, "RESULTS": str(results), "OUT": str(out)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    records = json.loads((out / "family" / "results.json").read_text())
    assert (out / "family" / "log.txt").is_file()
    assert {r["graph"] for r in records} == {"minnesota", "grid24-int", "grid16x48-real-closed",
                                             "del10-euclid-directed"}
    for r in records:
        assert "status" not in r, r
        for key in ("graph", "n", "m", "k", "partitioner", "stages", "process_seconds", "total_seconds",
                    "compile_seconds", "device", "versions", "commit", "rates", "packed_16bit"):
            assert key in r, key
        assert r["device"] == "cpu" and r["compile_seconds"] == 0.0  # the numpy backend compiles nothing
        assert r["warmup"]["verified_rows"] == 2
        n, b = r["n"], r["boundary_vertices"]
        rates = r["rates"]
        assert rates["min_plus_gdist_per_s"] == pytest.approx((n - b) * n / r["stages"]["min_plus"] / 1e9)
        relax = rates["min_plus_relaxations"]
        assert relax is not None and relax % n == 0 and 0 < relax / n <= (n - b) * b
        assert rates["min_plus_trelax_per_s"] == pytest.approx(relax / r["stages"]["min_plus"] / 1e12)
    minnesota = next(r for r in records if r["graph"] == "minnesota")
    a = scipy.io.mmread(str(DATA / "minnesota.mtx.gz"))
    assert minnesota["n"] == a.shape[0]
    directed = next(r for r in records if r["graph"] == "del10-euclid-directed")
    assert directed["directed"] is True and directed["n"] == 1024
    assert directed["made"]["command"][0] == "scripts/make_delaunay.py"


def test_scalar_sites_dry_run(tmp_path):
    needs_libraries()
    out = tmp_path / "out"
    proc = run(["bash", str(BENCH / "device" / "scalar_sites.sh")],
               env={"DRY": "1", "PYTHON": sys.executable, "OUT": str(out), "GRAPHS": "minnesota nosuchgraph"})
    assert proc.returncode == 1 and "no graph nosuchgraph" in proc.stdout, proc.stdout + proc.stderr
    sites = (out / "scalar_sites" / "sites-minnesota.txt").read_text().splitlines()
    assert "(arrays: numpy.ndarray)" in sites[0] and re.match(r"# \d+ operations at \d+ sites", sites[1])
    assert " END (status 0," in (out / "scalar_sites" / "timeline-minnesota.txt").read_text()


def test_gpu_tests_dry_run_covers_every_file_with_gpu_tests(tmp_path):
    out = tmp_path / "out"
    proc = run(["bash", str(BENCH / "device" / "gpu_tests.sh")],
               env={"DRY": "1", "PYTHON": sys.executable, "OUT": str(out), "PARTS": "2"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = (out / "gpu_tests" / "summary.txt").read_text().splitlines()
    listed = {name for line in summary for name in line.split("(", 1)[1].split(")", 1)[0].split()}
    marked = {f"tests/{path.name}" for path in (REPO / "tests").glob("test_*.py")
              if re.search(r"mark\.gpu\b", path.read_text())}
    assert len(summary) == 2 and listed == marked and "tests/test_gpu_pipeline.py" in listed
    assert all(" skipped" in line and " failed" not in line for line in summary)


def test_first_contact_dry_run(tmp_path):
    needs_libraries()
    results, out = tmp_path / "results", tmp_path / "out"
    proc = run(["bash", str(BENCH / "device" / "first_contact.sh")],
               env={"DRY": "1", "PYTHON": sys.executable, "RESULTS": str(results), "OUT": str(out)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    record = json.loads((out / "first_contact" / "first_contact-minnesota.json").read_text())
    for key in ("graph", "first_seconds", "second_seconds", "build_seconds", "device", "commit"):
        assert key in record
    assert record["graph"] == "minnesota" and record["device"] == "cpu"
    assert record["first_seconds"] > 0 and record["second_seconds"] > 0
    assert record["build_seconds"] is None and record["build_note"].startswith("skipped")
    assert [run["k"] for run in record["runs"]] == [record["runs"][0]["k"]] * 2


# ------------------------------------------------------------ the SciPy anchor
def test_scipy_anchor_on_minnesota(tmp_path):
    proc = run([sys.executable, str(BENCH / "scipy_anchor.py"), str(DATA / "minnesota.mtx.gz"), "--sources", "8",
                "--out-dir", str(tmp_path)], timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    r = json.loads((tmp_path / "scipy-minnesota.json").read_text())
    for key in ("graph", "n", "m", "sources", "seconds", "seconds_per_source", "extrapolated_all_pairs_seconds",
                "note", "host", "versions", "commit"):
        assert key in r, key
    a = scipy.io.mmread(str(DATA / "minnesota.mtx.gz"))
    assert r["graph"] == "minnesota" and r["n"] == a.shape[0] and r["sources"] == 8
    assert r["m"] == sp.triu(sp.coo_matrix(a), k=1).nnz  # each undirected edge counted once
    assert r["seconds"] > 0 and r["seconds"] == min(r["runs"]) and len(r["runs"]) == 3
    assert r["seconds_per_source"] == pytest.approx(r["seconds"] / 8, rel=1e-6)
    assert r["extrapolated_all_pairs_seconds"] == pytest.approx(r["seconds_per_source"] * r["n"], rel=1e-3, abs=1e-3)
    assert "extrapolation" in r["note"]
    assert {"platform", "cpu", "cores"} <= set(r["host"]) and r["host"]["cores"] >= 1
    assert set(r["versions"]) == {"numpy", "scipy", "python"} and r["versions"]["scipy"] == scipy.__version__
    assert isinstance(r["commit"], str) and r["commit"]


def test_scipy_anchor_refuses_a_missing_graph(tmp_path):
    proc = run([sys.executable, str(BENCH / "scipy_anchor.py"), str(tmp_path / "nope.mtx"), "--out-dir",
                str(tmp_path)], timeout=60)
    assert proc.returncode == 2 and "no such file" in proc.stderr
    assert not list(tmp_path.glob("scipy-*.json"))


# ------------------------------------------------------------ the result folders
RESULTS = BENCH / "results"
_CITED = re.compile(r"benchmarks/results/([A-Za-z0-9_.+-]+)")
# A work session's or an issue's tag in a name (s11b, issue7): result folders are named by what they measure.
_SESSION_TAG = re.compile(r"(?:^|[-_/])(?:s\d+[a-z]?|issue\d*|session\w*)(?=[-_/.]|$)", re.IGNORECASE)


def test_result_folders_cited_by_the_docs_exist():
    cited = {}
    for page in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        for name in _CITED.findall(page.read_text(encoding="utf-8")):
            cited.setdefault(name.rstrip("."), set()).add(page.name)
    assert {"one-gpu", "two-gpus", "answers", "anchors"} <= set(cited)  # the pages do cite result folders
    missing = {name: pages for name, pages in cited.items() if not (RESULTS / name).exists()}
    assert not missing, f"cited but not under benchmarks/results: {missing}"


def test_results_kept_lists_existing_folders():
    text = (BENCH / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Results kept"):text.index("## What the measurements found")]
    listed = re.findall(r"^\| `([^`]+)`(?:, `([^`]+)`)? \|", section, re.MULTILINE)
    names = {name.rstrip("/") for pair in listed for name in pair if name}
    assert len(names) > 10
    assert not [name for name in names if not (RESULTS / name).exists()]


def test_result_names_carry_no_session_tags():
    assert _SESSION_TAG.search("h100-s11b/x.json") and _SESSION_TAG.search("h200x4-s11b-log.txt")
    assert not _SESSION_TAG.search("two-gpus/roadFLA-k1045-sources1000-r2.json")
    proc = run(["git", "ls-files", "--", "benchmarks/results"])
    files = proc.stdout.split() if proc.returncode == 0 else []
    names = files or [str(p.relative_to(REPO)) for p in RESULTS.rglob("*") if "__pycache__" not in p.parts]
    tagged = [name for name in names if _SESSION_TAG.search(name.removeprefix("benchmarks/results/"))]
    assert not tagged, tagged


def test_profile_ranks_writes_the_phases_and_the_profile(tmp_path):
    """benchmarks/profile_ranks.py runs the command line under cProfile and writes, per rank, the phases
    in the order the rank entered them, each with the seconds of the one before, then the profile."""
    needs_libraries()
    proc = run([sys.executable, str(BENCH / "profile_ranks.py"), "--out", str(tmp_path), "--tag", "m", "--",
                "solve", str(DATA / "minnesota.mtx.gz"), "--output", "none", "--backend", "numpy", "--quiet"])
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "m-n1-r0.txt").read_text()
    lines = text.splitlines()
    phases = [line.split(")", 1)[1].strip() for line in lines if re.match(r"^\s+\d+\.\d{3} \(\+", line)]
    assert phases[0] == "reading the graph" and phases[-1] == "END"
    assert {"choosing the backend", "choosing k", "partitioning", "computing the components"} <= set(phases)
    assert "cumulative" in text and "make_plan" in text


def test_thread_timeline_samples_the_command_and_keeps_its_status(tmp_path):
    """benchmarks/thread_timeline.py runs the command line in its process, samples its threads and writes
    one line per change, then END with the command's exit status, which is also its own."""
    needs_libraries()
    out = tmp_path / "t.txt"
    proc = run([sys.executable, str(BENCH / "thread_timeline.py"), "--out", str(out), "--interval", "0.002", "--",
                "solve", str(DATA / "minnesota.mtx.gz"), "--output", "none", "--backend", "numpy", "--quiet"])
    assert proc.returncode == 0, proc.stderr
    lines = out.read_text().splitlines()
    end = next(i for i, line in enumerate(lines) if " END (status " in line)
    assert lines[0].startswith("# fastapsp solve ") and "END (status 0," in lines[end]
    samples = [line for line in lines[1:end] if re.match(r"^\s+\d+\.\d{3} MAIN:", line)]
    assert samples and len(samples) == end - 1
    times = [float(line.split()[0]) for line in lines[1:end + 1]]
    assert times == sorted(times)
    # After END, per thread, the seconds seen and what took them: MAIN imported the command line first.
    main = re.match(r"# MAIN (\d+\.\d+) s: (.*)$", lines[end + 2])
    assert lines[end + 1].startswith("# per thread") and main, lines[end:]
    assert 0 < float(main.group(1)) <= times[-1] + 0.01
    parts = dict(part.rsplit(" ", 1) for part in main.group(2).split(" | "))
    assert "import fastapsp.cli" in parts and sum(map(float, parts.values())) <= float(main.group(1)) + 1e-3
    bad = run([sys.executable, str(BENCH / "thread_timeline.py"), "--out", str(out), "--",
               "solve", str(tmp_path / "missing.mtx"), "--output", "none", "--backend", "numpy"])
    assert bad.returncode != 0 and "missing.mtx" in bad.stderr
    assert f"END (status {bad.returncode}," in out.read_text()


def test_scalar_operator_sites_lists_array_scalar_operations_and_keeps_the_run(tmp_path):
    """benchmarks/scalar_operator_sites.py runs the command line with fastapsp's operators rewritten into
    calls that note where an array meets a scalar: the run's result is the same, the sites are listed."""
    needs_libraries()
    out, plain, noted = tmp_path / "sites.txt", tmp_path / "plain.json", tmp_path / "noted.json"
    args = ["solve", str(DATA / "minnesota.mtx.gz"), "-k", "6", "--output", "none", "--backend", "numpy", "--quiet"]
    assert run([sys.executable, "-m", "fastapsp", *args, "--report", str(plain)]).returncode == 0
    proc = run([sys.executable, str(BENCH / "scalar_operator_sites.py"), "--array", "numpy", "--out", str(out),
                "--", *args, "--report", str(noted)])
    assert proc.returncode == 0, proc.stderr
    a, b = json.loads(plain.read_text()), json.loads(noted.read_text())
    assert [a[key] for key in ("k", "edge_cut", "boundary_vertices", "dtype")] == \
        [b[key] for key in ("k", "edge_cut", "boundary_vertices", "dtype")]
    lines = out.read_text().splitlines()
    count = re.match(r"# (\d+) operations at (\d+) sites", lines[1])
    sites = [line.split() for line in lines[2:] if not line.startswith("#")]
    assert count and int(count.group(2)) == len(sites) > 0
    assert all(site[0].startswith("fastapsp/") and int(site[2]) > 0 for site in sites)
    assert sum(int(site[2]) for site in sites) == int(count.group(1))


def test_scalar_operator_rewrite_computes_what_the_operators_do():
    import ast

    import numpy as np
    import scalar_operator_sites as tool

    source = "def f(a: int | None, b):\n    c = a - 1\n    c += 2\n    return (c < b, 3 * a, a ** 2 // 3, a & 1)\n"
    tree = ast.parse(source)
    tree = ast.fix_missing_locations(tool._Rewrite("x.py", tree).visit(tree))
    tool.SITES = sites = tool.Sites(np.ndarray)
    space = {tool.HELPER: sites}
    exec(compile(tree, "x.py", "exec"), space)
    a = np.arange(5)
    assert all(np.array_equal(x, y) for x, y in zip(space["f"](a, a), (a + 1 < a, 3 * a, a ** 2 // 3, a & 1)))
    assert "def f(a: int | None, b):" in ast.unparse(tree)  # annotations are not operations: left as written
    assert {(site, name) for site, name in sites.counts} == \
        {("x.py:2", "sub"), ("x.py:4", "mul"), ("x.py:4", "pow"), ("x.py:4", "floordiv"), ("x.py:4", "and_")}
    # ``c += 2`` stays an in-place operator: CuPy's does not go through NumPy's ufunc dispatch.
    assert space["f"](7, 9) == (True, 21, 16, 1) and len(sites.counts) == 5  # scalars alone: nothing noted


# ------------------------------------------------------------ the benchmarks' --graph NAME=PATH
@pytest.mark.parametrize("script", ["library_bench.py", "boundary_laws.py", "graph_cache_bench.py", "refine_bench.py"])
def test_benchmarks_refuse_a_malformed_graph_in_one_line(script, tmp_path):
    for spec, message in (("no-equals-sign", "expected NAME=PATH"), (f"g={tmp_path / 'missing.mtx'}", "no such file")):
        proc = run([sys.executable, str(BENCH / script), "--graph", spec])
        assert proc.returncode == 2, proc.stderr
        assert "argument --graph" in proc.stderr and message in proc.stderr and "Traceback" not in proc.stderr


def test_named_graph_splits_at_the_first_equals_sign(tmp_path):
    from _common import named_graph

    path = tmp_path / "a=b.mtx"
    path.write_text("%%MatrixMarket matrix coordinate pattern general\n1 1 0\n")
    assert named_graph(f"x={path}") == ("x", str(path))


# ------------------------------------------------------------ the cost model against whole runs
def _report(k, total, rule, min_plus, predicted_min_plus, graph="g.mtx.gz", read=0.1, choose_k=0.0):
    return {"graph": graph, "backend": "cupy", "dtype": "float32", "k": k, "total_seconds": total,
            "sssp_method": "boundary-graph", "k_choice": {"k": k, "rule": rule},
            "stages": {"min_plus": min_plus, "boundary_graph": 0.5, "read": read, "choose_k": choose_k},
            "predicted_seconds": {"boundary-graph": {"min_plus": predicted_min_plus, "boundary_graph": 2.0,
                                                     "boundary_rows": 0.0, "total": 9.0}}}


def test_cost_model_check_ratios_factors_and_fastest_k(tmp_path):
    import cost_model_check

    runs = [_report(100, 10.0, "cost model", 4.0, 8.0), _report(200, 9.0, "given", 3.0, 4.0),
            _report(200, 9.5, "given", 3.0, 4.0), _report(50, 1.0, "given", 1.0, 1.0, graph="other.mtx")]
    (tmp_path / "runs.json").write_text(json.dumps(runs))
    (tmp_path / "not-a-run.json").write_text(json.dumps({"graph": "g", "k": 3}))
    found = cost_model_check.records([tmp_path])
    assert len(found) == 4
    result = cost_model_check.check(found)
    first = next(row for row in result["runs"] if row["k"] == 100)
    assert first["chosen"] and first["stages"]["min_plus"]["ratio"] == 0.5
    assert first["stages"]["boundary_graph"]["ratio"] == 0.25
    assert "boundary_rows" not in first["stages"]  # predicted 0: no ratio
    assert result["factors"]["min_plus"] == 0.75  # median of 0.5, 0.75, 0.75, 1.0
    g = result["graphs"]["g/cupy/float32"]
    assert g["model_k"] == [100] and g["fastest_k"] == 200 and g["seconds_by_k"] == pytest.approx({"100": 9.9, "200": 8.9})
    assert g["model_loss_seconds"] == pytest.approx(1.0)
    assert result["graphs"]["other/cupy/float32"]["model_k"] == []
    # the k are compared without the stages that do not depend on k: a first run's parse, choosing k
    runs[0] = _report(100, 10.0, "cost model", 4.0, 8.0, read=1.5, choose_k=0.3)
    (tmp_path / "runs.json").write_text(json.dumps(runs))
    g = cost_model_check.check(cost_model_check.records([tmp_path]))["graphs"]["g/cupy/float32"]
    assert g["fastest_k"] == 100 and g["seconds_by_k"]["100"] == pytest.approx(8.2)
    assert g["model_loss_seconds"] == 0


def test_cost_model_check_on_committed_runs(tmp_path):
    out = tmp_path / "check.json"
    proc = run([sys.executable, str(BENCH / "cost_model_check.py"), str(RESULTS / "k-sweep-c3a4181" / "runs"),
                "--json", str(out)])
    assert proc.returncode == 0, proc.stderr
    assert "del20-euclid k=1218 (model's k)" in proc.stdout and "fastest measured k" in proc.stdout
    assert set(json.loads(out.read_text())["factors"]) == {"local_fw", "boundary_graph", "boundary_rows", "min_plus"}
    empty = run([sys.executable, str(BENCH / "cost_model_check.py"), str(tmp_path / "nothing")])
    assert empty.returncode == 1 and "no run" in empty.stderr and "Traceback" not in empty.stderr


def test_k_sweep_dry_run_with_a_base_tree(tmp_path):
    """benchmarks/device/k_sweep.sh on the CPU: a shipped graph and a made one at the model's k and a given
    k, each run paired with one of a base tree (here this one), reports and times in one archive; a graph
    it cannot find or make is named and makes the exit status 1."""
    needs_libraries()
    out, data = tmp_path / "out", tmp_path / "data"
    proc = run(["bash", str(BENCH / "device" / "k_sweep.sh")],
               env={"DRY": "1", "PYTHON": sys.executable, "OUT": str(out), "DATA": str(data),
                    "GRAPHS": "minnesota del9-unit nosuchgraph", "KS": "auto 4", "BASE": str(REPO)})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "no graph nosuchgraph" in proc.stdout
    times = (out / "k_sweep" / "times.txt").read_text().splitlines()
    runs = [line for line in times if " rc=" in line]
    assert len(runs) == 8 and all(" rc=0 " in line for line in runs), times
    assert (data / "del9-unit.mtx").is_file() and (out / "k_sweep.tgz").is_file()
    reports = sorted(p.name for p in (out / "k_sweep" / "runs").glob("*.json"))
    assert reports == sorted(f"{g}-k{k}-{tree}-1.json" for g in ("minnesota", "del9-unit") for k in ("auto", "4")
                             for tree in ("new", "base"))
    given = json.loads((out / "k_sweep" / "runs" / "del9-unit-k4-new-1.json").read_text())
    assert given["k"] == 4 and given["n"] == 512 and given["device"] == "cpu"
    check = run([sys.executable, str(BENCH / "cost_model_check.py"), str(out / "k_sweep" / "runs")])
    assert check.returncode == 0 and "fastest measured k" in check.stdout


def test_scalar_operator_sites_counts_each_array_ufunc_call_by_its_stack():
    """Where the array type's ``__array_ufunc__`` can be wrapped (a Python class, as cupy.ndarray is), every
    call is counted with the innermost line outside NumPy that made it; the operation's result is unchanged."""
    import numpy as np
    import scalar_operator_sites as tool

    class Wrapped:
        def __init__(self, values):
            self.values = np.asarray(values)

        def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
            return Wrapped(getattr(ufunc, method)(*(x.values if isinstance(x, Wrapped) else x for x in inputs)))

    sites = tool.Sites(Wrapped)
    assert sites.watch_dispatch(Wrapped) and not tool.Sites(np.ndarray).watch_dispatch(np.ndarray)
    here = sys._getframe().f_lineno + 1
    result = np.subtract(Wrapped([3, 4]), 1)
    assert np.array_equal(result.values, [2, 3])
    assert list(sites.dispatches.items()) == [(("subtract.__call__", f"tests/test_benchmarks.py:{here}", "-"), 1)]
    assert "# dispatch subtract.__call__ 1 tests/test_benchmarks.py:%d -" % here in tool.report(sites)


def test_closures_through_host_finds_no_link_between_the_gpus(tmp_path, monkeypatch):
    """benchmarks/closures_through_host.py runs the command line with the plan's peer_rate replaced by
    None (checked in-process: the report's solve and the patch), and keeps the command's status."""
    needs_libraries()
    import importlib.util

    import fastapsp.planning as planning

    spec = importlib.util.spec_from_file_location("closures_through_host", BENCH / "closures_through_host.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(planning, "peer_rate", planning.peer_rate)  # restored after the test
    report = tmp_path / "r.json"
    monkeypatch.setattr(sys, "argv", ["closures_through_host.py", "--", "solve", str(DATA / "minnesota.mtx.gz"),
                                      "--output", "none", "--backend", "numpy", "--quiet", "--report", str(report)])
    assert module.main() == 0
    assert planning.peer_rate(object()) is None
    assert json.loads(report.read_text())["n"] == 2642
    monkeypatch.setattr(sys, "argv", ["closures_through_host.py", "--", "solve", str(tmp_path / "missing.mtx")])
    assert module.main() != 0
