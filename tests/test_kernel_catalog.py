"""The catalog of kernel variants (fastapsp/kernels/catalog.py) and ``fastapsp build-kernels``.

Without a GPU: the catalog names files and kernels that exist, lists each module
once, covers every kernel file a ``get_kernel`` call of the package names, and
the command fails in one line.  With a GPU: a build into an empty cache leaves a
stamp and the next build compiles nothing, and every module a set of solves
loads is one the catalog builds.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fastapsp
from fastapsp.backend import gpu_count
from fastapsp.kernels import KERNEL_DIR, kernel_source, loaded_modules, module_code
from fastapsp.kernels.catalog import variants

from cli_util import DATA, cli_env, run_cli

PACKAGE = Path(fastapsp.__file__).resolve().parent


def _kernels_defined(file: str) -> set:
    """Names of the ``extern "C"`` kernels of ``file`` (those made by sssp.cu's macros included)."""
    source = kernel_source(file)
    # the launch bounds written out, or a macro of the file in their place
    names = set(re.findall(r'extern "C" __global__ void(?: __launch_bounds__\([^)]*\)| [A-Z][A-Z0-9_]*)?\s+(\w+)\s*\(',
                           source))
    names |= set(re.findall(r'^(?:LEVEL|PERSISTENT)_KERNEL\((\w+),', source, flags=re.MULTILINE))
    return names


def test_every_variant_names_a_kernel_of_an_existing_file():
    for v in variants():
        assert (KERNEL_DIR / v.file).is_file(), v
        assert v.name in _kernels_defined(v.file), v
        assert v.dtype in ("float32", "float64") and v.index_dtype in ("int32", "int64"), v


def test_each_module_is_listed_once():
    keys = [v.key() for v in variants()]
    assert len(keys) == len(set(keys))


def test_every_module_compiles_with_the_same_options():
    # CuPy checks its compiler once a process per distinct set of options: the variants' macros go in
    # their text, so every module shares one set and differs in its text only.
    codes, options = set(), set()
    for v in variants():
        file, flags, _ = v.key()
        code, opts = module_code(file, flags)
        codes.add(code)
        options.add(opts)
        for flag in flags:  # each -D flag is a #define before the source, as the command line defines it
            name, equals, value = flag[2:].partition("=")
            assert f"#define {name} {value if equals else 1}\n" in code.split("#line 1\n")[0] + "\n", (v, flag)
    assert len(options) == 1, options
    assert len(codes) == len({v.key()[:2] for v in variants()})  # one text per module of the catalog


def test_every_kernel_file_the_package_launches_is_in_the_catalog():
    launched = set()
    for path in PACKAGE.rglob("*.py"):
        launched |= set(re.findall(r'get_kernel\(\s*"([\w.]+\.cu)"', path.read_text()))
    assert launched, "no get_kernel call found: the pattern is out of date"
    assert launched <= {v.file for v in variants()}, launched - {v.file for v in variants()}


def test_build_kernels_without_a_gpu_fails_in_one_line():
    if gpu_count():
        pytest.skip("a GPU is visible")
    result = run_cli("build-kernels")
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fastapsp: error: build-kernels: no usable GPU"), result.stderr


def test_build_kernels_refuses_a_bad_job_count():
    result = run_cli("build-kernels", "--jobs", "0")
    assert result.returncode != 0
    assert result.stderr.strip() == "fastapsp: error: --jobs: 0 is not a positive number of processes"


@pytest.mark.gpu
@pytest.mark.skipif(gpu_count() == 0, reason="no CUDA GPU visible")
def test_build_into_an_empty_cache_then_nothing_to_build(tmp_path):
    env = dict(cli_env(), CUPY_CACHE_DIR=str(tmp_path / "cache"))
    code = ("import json; from fastapsp.kernels.catalog import build; "
            "print(json.dumps(build(jobs={jobs})))")
    first = subprocess.run([sys.executable, "-c", code.format(jobs=4)], env=env, capture_output=True, text=True,
                           timeout=600)
    assert first.returncode == 0, first.stderr
    info = json.loads(first.stdout.strip().splitlines()[-1])
    assert info["built"] and info["variants"] == len(variants()) and os.path.exists(info["stamp"])
    cubins = [p for p in (tmp_path / "cache").iterdir() if p.suffix == ".cubin"]
    assert len(cubins) >= len(variants())
    second = subprocess.run([sys.executable, "-c", code.format(jobs=4)], env=env, capture_output=True, text=True,
                            timeout=600)
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout.strip().splitlines()[-1])["built"] is False
    # A solve in a process that finds the stamp compiles none of the catalog's modules again.
    solve = subprocess.run([sys.executable, "-m", "fastapsp", "solve", str(DATA / "minnesota.mtx.gz"), "--backend",
                            "cupy", "-k", "8", "--output", "none", "--report", str(tmp_path / "r.json")],
                           env=env, capture_output=True, text=True, timeout=600)
    assert solve.returncode == 0, solve.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert "compile" not in report["stages"] and report["compile_seconds"] >= 0
    assert len([p for p in (tmp_path / "cache").iterdir() if p.suffix == ".cubin"]) >= len(cubins)
    # The build's warm-up kept the compiler banners of the option sets it met: a fresh process that runs
    # the command line compiles no empty program to find its cached kernels.
    kept = list((tmp_path / "cache").glob("fastapsp-compiler-checks-sm_*.json"))
    assert len(kept) == 1 and json.loads(kept[0].read_text())
    # Each empty program is written to stderr as it is compiled (the command line may leave by os._exit).
    probe = ("import os, runpy, sys; from cupy.cuda import compiler; inner = compiler._preprocess\n"
             "def counted(*a, **k):\n    os.write(2, ('EMPTY PROGRAM %r\\n' % (a[1],)).encode()); "
             "return inner(*a, **k)\n"
             "compiler._preprocess = counted\n"
             "sys.argv = ['fastapsp', 'solve', sys.argv[1], '--backend', 'cupy', '-k', '8', '--output', 'none', "
             "'--report', sys.argv[2]]\n"
             "runpy.run_module('fastapsp', run_name='__main__')\n")
    checked = subprocess.run([sys.executable, "-c", probe, str(DATA / "minnesota.mtx.gz"), str(tmp_path / "p.json")],
                             env=env, capture_output=True, text=True, timeout=600)
    assert checked.returncode == 0 and (tmp_path / "p.json").exists(), checked.stderr
    assert "EMPTY PROGRAM" not in checked.stderr, checked.stderr[-2000:]


def test_compiler_checks_kept_and_read_back(tmp_path):
    """The compiler banners CuPy learns per option set go to a JSON file and back: keys that are literals
    only, entries a table already has kept as they are, a missing or broken file adding nothing."""
    from fastapsp.kernels.catalog import read_checks, write_checks

    key = ("90", ("-std=c++17", "-ftz=true"), (13, 0), "nvrtc", "-arch=compute_90")
    table = {key: "// banner\n// Cuda compilation tools", ("90", object()): "not a literal", ("80",): 7}
    path = str(tmp_path / "checks.json")
    assert write_checks(path, table) == 1
    fresh = {}
    assert read_checks(path, fresh) == 1 and fresh == {key: table[key]}
    mine = {key: "// another banner"}
    assert read_checks(path, mine) == 0 and mine == {key: "// another banner"}
    assert read_checks(str(tmp_path / "missing.json"), fresh) == 0
    (tmp_path / "broken.json").write_text('[["(1, 2", "x"], ["not python", "y"], 3, [], "z"')
    assert read_checks(str(tmp_path / "broken.json"), fresh) == 0
    (tmp_path / "odd.json").write_text('[["(1, 2", "x"], ["not python", "y"], 3, [], ["(5,)", 6], ["(4,)", "ok"]]')
    assert read_checks(str(tmp_path / "odd.json"), fresh) == 1 and fresh[(4,)] == "ok"


@pytest.mark.gpu
@pytest.mark.skipif(gpu_count() == 0, reason="no CUDA GPU visible")
@pytest.mark.parametrize("case", ["undirected-unit", "directed-real", "stats", "predecessors", "float64",
                                  "boundary-graph", "device"])
def test_every_module_a_solve_loads_is_in_the_catalog(case, tmp_path, monkeypatch):
    from fastapsp import kernels

    # Only this solve's modules: other tests of the process load variants of their own (compiler options
    # a solve never passes), which the catalog need not hold.
    for name, empty in (("_modules", {}), ("_functions", {}), ("_prebuilt", set())):
        monkeypatch.setattr(kernels, name, empty)
    rng = np.random.default_rng(3)
    graph = fastapsp.read_graph(DATA / "minnesota.mtx.gz")
    keywords = {"backend": "cupy", "k": 16}
    if case == "directed-real":
        src, dst = rng.integers(0, 600, 6000), rng.integers(0, 600, 6000)
        graph = fastapsp.Graph.from_edges(600, src, dst, rng.uniform(0.5, 3.0, 6000), directed=True)
    if case == "float64":
        keywords["dtype"] = "float64"
    if case == "boundary-graph":
        keywords["sssp_method"] = "boundary-graph"
    if case == "predecessors":
        keywords["return_predecessors"] = True
    if case == "device":
        keywords["output"] = "device"
    if case == "stats":
        fastapsp.stats(graph, **keywords)
    else:
        fastapsp.solve(graph, **keywords)
    known = {v.key() for v in variants()}
    used = [key for key in loaded_modules() if not any(flag.startswith("-DSQ_CAP") for flag in key[1])]
    assert set(used) <= known, sorted(set(used) - known)


def test_first_check_of_a_process_reads_the_kept_banners_first(monkeypatch):
    """ensure_built reads the banners kept by an earlier build before it starts the stamp's check, so that
    a library process's first kernel finds its cache without compiling; a failure to read is no error."""
    from fastapsp.kernels import catalog

    events = []
    monkeypatch.setattr(catalog, "_state", {"thread": None, "seconds": 0.0, "done": False})
    monkeypatch.setattr(catalog, "load_compiler_checks", lambda device: events.append(("load", device)) or 3)
    monkeypatch.setattr(catalog, "build", lambda device: events.append(("build", device)) or {"built": True})
    assert catalog.ensure_built(device=2) >= 0.0
    assert events == [("load", 2), ("build", 2), ("load", 2)]  # the build's own banners read after it
    assert catalog.ensure_built(device=2) == 0.0 and len(events) == 3  # once a process
    # A build found done (its stamp there) gives nothing new to read: the file is read once.
    monkeypatch.setattr(catalog, "_state", {"thread": None, "seconds": 0.0, "done": False})
    monkeypatch.setattr(catalog, "build", lambda device: events.append(("build", device)) or {"built": False})
    assert catalog.ensure_built(device=1) >= 0.0
    assert events[3:] == [("load", 1), ("build", 1)]

    def broken(device):
        raise OSError("unreadable")

    monkeypatch.setattr(catalog, "_state", {"thread": None, "seconds": 0.0, "done": False})
    monkeypatch.setattr(catalog, "load_compiler_checks", broken)
    assert catalog.ensure_built(device=0) >= 0.0 and events[-1] == ("build", 0)  # a broken load, then the build


def test_the_warm_up_parts_are_shared_out_once_whatever_the_processes():
    from fastapsp.kernels.warmup import PARTS, share

    for jobs in (1, 2, 3, len(PARTS), 16):
        shares = [share(j, jobs) for j in range(jobs)]
        assert sorted(name for s in shares for name in s) == sorted(PARTS)
    assert share(len(PARTS), len(PARTS) + 1) == []  # a process left without a part (it exits at once)
