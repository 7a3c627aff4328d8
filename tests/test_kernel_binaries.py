"""Kernel binaries built ahead of time by nvcc (fastapsp/kernels/binaries.py, aot.py; ``build-kernels --aot``).

Without nvcc or a GPU: binary names hash everything that determines them, a
made-up index and file are found, a stale name is not used, a checksum that
differs is refused with a warning, the architecture rules (cubins of the same
major version, else PTX of a lower one), ``get_kernel`` loading a binary or
falling back to NVRTC and ``build`` compiling only what the binaries do not
cover (both with a stand-in for CuPy), and the command's errors.  With nvcc: a
subset builds into fatbins that the index lists.  With a GPU and nvcc: a
prebuilt min-plus module is loaded and gives NVRTC's results, and a solve with
every variant prebuilt loads nothing else and matches SciPy.
"""

import json
import os
import shutil
import subprocess
import sys
import types
import warnings

import numpy as np
import pytest

import fastapsp.kernels as kernels
from fastapsp.backend import gpu_count
from fastapsp.errors import BackendError, ConfigError, PrebuiltKernelWarning
from fastapsp.kernels import aot, binaries, catalog
from fastapsp.kernels.binaries import FORMAT, binary_name, module_id, prebuilt_binary, read_index, runnable_code
from fastapsp.kernels.catalog import variants

from cli_util import DATA, cli_env, run_cli

FATBIN_MAGIC = 0xBA55ED50
NVCC = "13.0.88"
ARCHS = ["sm_80", "sm_90"]
KEY = ("jet.cu", ("-DREAL=float",), False)


def _made_up(folder, keys, *, architectures=ARCHS, nvcc=NVCC, name=None, sha=None):
    """An index in ``folder`` listing a fake fatbin for each of ``keys`` (``name``/``sha`` override the right
    ones); returns the paths by key."""
    folder.mkdir(parents=True, exist_ok=True)
    modules, paths = {}, {}
    for key in keys:
        file = name or binary_name(key, architectures, nvcc)
        (folder / file).write_bytes(FATBIN_MAGIC.to_bytes(4, "little") + repr(key).encode())
        modules[module_id(key)] = {"file": file, "sha256": sha or binaries.file_sha256(folder / file)}
        paths[key] = str(folder / file)
    index = {"format": FORMAT, "fastapsp": "test", "nvcc": nvcc, "architectures": list(architectures),
             "ptx": f"compute_{architectures[-1][3:]}", "modules": modules}
    (folder / "index.json").write_text(json.dumps(index))
    return paths


def test_binary_name_hashes_everything_that_determines_the_binary():
    name = binary_name(KEY, ARCHS, NVCC)
    assert len(name) == 32 + len(".fatbin") and name.endswith(".fatbin")
    assert binary_name(KEY, ARCHS, NVCC) == name  # the build and the loader compute the same
    others = [binary_name(("jet.cu", ("-DREAL=double",), False), ARCHS, NVCC),  # the module's text
              binary_name(("jet.cu", ("-DREAL=float",), True), ARCHS, NVCC),  # cooperative
              binary_name(KEY, ["sm_90"], NVCC), binary_name(KEY, ARCHS, "12.9.41")]
    assert len({name, *others}) == 5


def test_a_made_up_binary_is_found_and_a_stale_one_is_not(tmp_path):
    path = _made_up(tmp_path / "good", [KEY])[KEY]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert prebuilt_binary(KEY, "sm_90", folder=tmp_path / "good") == path
        # A module the index does not list, and no index at all: NVRTC, silently.
        assert prebuilt_binary(("jet.cu", ("-DREAL=double",), False), "sm_90", folder=tmp_path / "good") is None
        assert prebuilt_binary(KEY, "sm_90", folder=tmp_path / "none") is None
        # Built from other sources (or by another nvcc): the name the loader computes is not the index's.
        stale = binary_name(KEY, ARCHS, "12.9.41")
        _made_up(tmp_path / "stale", [KEY], name=stale)
        assert prebuilt_binary(KEY, "sm_90", folder=tmp_path / "stale") is None


def test_a_binary_whose_checksum_differs_is_refused_once_with_a_warning(tmp_path):
    _made_up(tmp_path, [KEY], sha="0" * 64)
    with pytest.warns(PrebuiltKernelWarning, match="SHA-256"):
        assert prebuilt_binary(KEY, "sm_90", folder=tmp_path) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert prebuilt_binary(KEY, "sm_90", folder=tmp_path) is None  # checked once a process


def test_architecture_rules():
    index = {"architectures": ["sm_80", "sm_90"], "ptx": "compute_90"}
    assert runnable_code(index, "sm_90") == "sm_90"
    assert runnable_code(index, "sm_86") == runnable_code(index, "sm_89") == "sm_80"  # same major version
    assert runnable_code(index, "sm_100") == runnable_code(index, "sm_120") == "compute_90"  # the PTX, JIT
    assert runnable_code(index, "sm_75") is None
    assert runnable_code({"architectures": ["sm_90"], "ptx": "compute_90"}, "sm_89") is None
    assert runnable_code({"architectures": ["sm_100"], "ptx": "compute_100"}, "sm_103") == "sm_100"


def test_a_binary_for_other_gpus_is_not_used(tmp_path):
    _made_up(tmp_path, [KEY], architectures=["sm_90"])
    assert prebuilt_binary(KEY, "sm_80", folder=tmp_path) is None
    assert prebuilt_binary(KEY, "sm_100", folder=tmp_path) is not None  # through the PTX


@pytest.mark.parametrize("text", ["not json", "[]", '{"format": 99}', json.dumps(
    {"format": FORMAT, "nvcc": NVCC, "architectures": ["compute_90"], "ptx": None, "modules": {}}), json.dumps(
    {"format": FORMAT, "nvcc": NVCC, "architectures": ["sm_90"], "modules": {"x": {"file": 3}}})])
def test_a_broken_index_is_no_index(tmp_path, text):
    (tmp_path / "index.json").write_text(text)
    assert read_index(tmp_path) is None


def test_index_identity_names_what_a_device_would_load(tmp_path):
    assert binaries.index_identity("sm_90", folder=tmp_path / "none") == "none"
    _made_up(tmp_path / "a", [KEY])
    _made_up(tmp_path / "b", [KEY, ("jet.cu", ("-DREAL=double",), False)])
    a, b = (binaries.index_identity("sm_90", folder=tmp_path / x) for x in "ab")
    assert a != b and a.endswith(" sm_90")  # another index, another identity
    assert binaries.index_identity("sm_86", folder=tmp_path / "a").endswith(" sm_80")  # what that GPU runs


def test_coverage_counts_the_current_binaries(tmp_path):
    keys = [v.key() for v in variants()]
    _made_up(tmp_path, keys[:5])
    held = binaries.coverage(keys, "sm_90", folder=tmp_path)
    assert held["covered"] == set(keys[:5]) and held["runs"] == "sm_90" and held["index_sha256"]
    assert binaries.coverage(keys, "sm_75", folder=tmp_path)["covered"] == set()
    assert binaries.coverage(keys, folder=tmp_path / "none")["index"] is None


# ------------------------------------------------------------------ a stand-in for CuPy
class _FakeModule:
    """cupy.RawModule: records how it was made; ``fail`` makes loading a file fail as a driver would."""

    made: list = []
    fail = False

    def __init__(self, *, code=None, path=None, options=(), enable_cooperative_groups=False):
        self.source = ("path", path) if path is not None else ("code", code)
        _FakeModule.made.append(self.source)

    def get_function(self, name):
        if self.source[0] == "path" and _FakeModule.fail:
            raise RuntimeError("CUDA_ERROR_UNSUPPORTED_PTX_VERSION: the provided PTX was compiled with an "
                               "unsupported toolchain")
        return (self.source, name)


@pytest.fixture
def fake_cupy(monkeypatch, tmp_path):
    """CuPy replaced by a stand-in (device 0, compute capability 9.0), fresh module caches in
    fastapsp.kernels, and the prebuilt folder moved to ``tmp_path/prebuilt``."""
    cuda = types.ModuleType("cupy.cuda")
    cuda.Device = lambda device=None: types.SimpleNamespace(id=0, compute_capability="90", use=lambda: None)
    cuda.nvrtc = types.SimpleNamespace(getVersion=lambda: (13, 0))
    cuda.compiler = types.SimpleNamespace(get_cache_dir=lambda: str(tmp_path / "cache"))
    cupy = types.ModuleType("cupy")
    cupy.__version__, cupy.cuda, cupy.RawModule = "stand-in", cuda, _FakeModule
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setitem(sys.modules, "cupy.cuda", cuda)
    for name, empty in (("_modules", {}), ("_functions", {}), ("_prebuilt", set())):
        monkeypatch.setattr(kernels, name, empty)
    monkeypatch.setattr(binaries, "PREBUILT_DIR", tmp_path / "prebuilt")
    monkeypatch.setattr(_FakeModule, "made", [])
    monkeypatch.setattr(_FakeModule, "fail", False)
    return tmp_path / "prebuilt"


def test_get_kernel_loads_the_prebuilt_binary(fake_cupy):
    path = _made_up(fake_cupy, [KEY])[KEY]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kernels.get_kernel("jet.cu", "jet_propose")
    assert _FakeModule.made == [("path", path)]
    assert kernels.prebuilt_modules() == kernels.loaded_modules() == [KEY]
    kernels.get_kernel("jet.cu", "jet_propose", np.float64)  # not prebuilt: NVRTC
    assert _FakeModule.made[-1][0] == "code" and kernels.prebuilt_modules() == [KEY]
    assert len(kernels.loaded_modules()) == 2


def test_a_binary_that_fails_to_load_falls_back_to_nvrtc_with_one_warning(fake_cupy):
    path = _made_up(fake_cupy, [KEY])[KEY]
    _FakeModule.fail = True
    with pytest.warns(PrebuiltKernelWarning) as caught:
        kernels.get_kernel("jet.cu", "jet_propose")
    assert len(caught) == 1
    message = str(caught[0].message)
    assert path in message and "UNSUPPORTED_PTX_VERSION" in message and "NVRTC" in message
    assert [m[0] for m in _FakeModule.made] == ["path", "code"]
    assert kernels.prebuilt_modules() == [] and kernels.loaded_modules() == [KEY]


def test_build_compiles_only_what_the_binaries_do_not_cover(fake_cupy, monkeypatch):
    compiled, every = [], variants()
    monkeypatch.setattr(catalog, "_compile_in_processes", lambda every, todo, jobs, device: compiled.append(todo))
    monkeypatch.setattr(catalog, "_warm_up_in_process", lambda device, jobs=1: "done")
    nothing = catalog.stamp_path(0)
    _made_up(fake_cupy, [v.key() for v in every])
    info = catalog.build(jobs=2)
    assert info["built"] and info["prebuilt"] == len(every) and info["compiled"] == 0 and compiled == []
    assert info["warm_up"] == "done"  # CuPy's own kernels are still warmed up
    assert json.loads(open(info["stamp"]).read())["prebuilt"] == len(every)
    assert info["stamp"] != nothing  # the stamp names the binaries in use
    assert catalog.build()["built"] is False
    jet = [i for i, v in enumerate(every) if v.file == "jet.cu"]
    shutil.rmtree(fake_cupy)
    _made_up(fake_cupy, [every[i].key() for i in jet])
    info = catalog.build(jobs=2)
    assert info["built"] and info["prebuilt"] == len(jet) and info["compiled"] == len(every) - len(jet)
    assert compiled == [[i for i in range(len(every)) if i not in jet]]
    assert len({nothing, info["stamp"], catalog.stamp_path(0)}) == 2 and info["stamp"] == catalog.stamp_path(0)


# ------------------------------------------------------------------ the command
def test_a_bad_architecture_is_one_line():
    for value in ("sm_9x", "compute_90", "90", ""):
        result = run_cli("build-kernels", "--aot", "--arch", value)
        assert result.returncode != 0
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"fastapsp: error: --arch: {value!r} is not a GPU "
                                                       "architecture; allowed:"), result.stderr


def test_aot_options_need_aot_and_only_names_catalog_files():
    result = run_cli("build-kernels", "--arch", "sm_90")
    assert result.returncode != 0 and result.stderr.strip() == (
        "fastapsp: error: --arch: only with --aot (the kernel cache is built for this machine's GPU)")
    result = run_cli("build-kernels", "--aot", "--only", "nope.cu")
    lines = result.stderr.strip().splitlines()
    assert result.returncode != 0 and len(lines) == 1 and "--only: 'nope.cu' is not a kernel file" in lines[0]
    assert "jet.cu" in lines[0]


def test_nvcc_missing_is_one_line(tmp_path):
    env = dict(cli_env(), PATH=str(tmp_path), CUDA_HOME=str(tmp_path / "cuda"))
    env.pop("CUDA_PATH", None)
    result = subprocess.run([sys.executable, "-m", "fastapsp", "build-kernels", "--aot", "--out", str(tmp_path / "o")],
                            env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fastapsp: error: build-kernels --aot: nvcc not found ("), lines
    assert f"CUDA_HOME={tmp_path / 'cuda'} (no bin/nvcc)" in lines[0] and "CUDA_PATH not set" in lines[0]
    assert not (tmp_path / "o").exists()


def test_find_nvcc_prefers_cuda_path(tmp_path, monkeypatch):
    nvcc = tmp_path / "toolkit" / "bin" / "nvcc"
    nvcc.parent.mkdir(parents=True)
    nvcc.write_text("#!/bin/sh\n")
    nvcc.chmod(0o755)
    monkeypatch.setenv("CUDA_PATH", str(tmp_path / "toolkit"))
    monkeypatch.setenv("PATH", str(tmp_path))
    assert aot.find_nvcc() == str(nvcc)
    monkeypatch.delenv("CUDA_PATH")
    monkeypatch.delenv("CUDA_HOME", raising=False)
    with pytest.raises(BackendError, match="nvcc not found"):
        aot.find_nvcc()


def test_parse_architectures():
    assert aot.parse_architectures("sm_90, sm_80,sm_90") == ["sm_80", "sm_90"]
    assert aot.parse_architectures(("sm_100", "sm_90")) == ["sm_90", "sm_100"]
    with pytest.raises(ConfigError, match="--arch: 'sm90'"):
        aot.parse_architectures("sm90")


def test_info_names_the_prebuilt_folder():
    result = run_cli("info")
    assert result.returncode == 0, result.stderr
    assert "prebuilt kernels: " in result.stdout, result.stdout


# ------------------------------------------------------------------ with nvcc
_nvcc = shutil.which("nvcc") or next((os.path.join(os.environ[v], "bin", "nvcc") for v in ("CUDA_PATH", "CUDA_HOME")
                                      if os.environ.get(v) and os.path.isfile(os.path.join(os.environ[v], "bin",
                                                                                           "nvcc"))), None)
needs_nvcc = pytest.mark.skipif(_nvcc is None, reason="nvcc (the CUDA toolkit) not found")


@needs_nvcc
def test_a_subset_builds_into_fatbins_the_index_lists(tmp_path):
    out = tmp_path / "prebuilt"
    result = run_cli("build-kernels", "--aot", "--arch", "sm_90", "--out", out, "--only", "jet.cu,sssp.cu",
                     timeout=600)
    assert result.returncode == 0, result.stderr
    index = read_index(out)
    keys = [v.key() for v in variants() if v.file in ("jet.cu", "sssp.cu")]
    assert index is not None and index["architectures"] == ["sm_90"] and index["ptx"] == "compute_90"
    assert set(index["modules"]) == {module_id(k) for k in keys}
    assert any(k[2] for k in keys)  # sssp.cu's cooperative modules are prebuilt too
    for key in keys:
        entry = index["modules"][module_id(key)]
        assert entry["file"] == binary_name(key, ["sm_90"], index["nvcc"])
        data = (out / entry["file"]).read_bytes()
        assert int.from_bytes(data[:4], "little") == FATBIN_MAGIC, entry
        assert binaries.file_sha256(out / entry["file"]) == entry["sha256"]
    assert binaries.coverage([v.key() for v in variants()], "sm_90", folder=out)["covered"] == set(keys)
    assert sorted(p.name for p in out.iterdir()) == sorted([index["modules"][module_id(k)]["file"] for k in keys]
                                                          + ["index.json"])
    # Built again: every file is kept; a narrower build removes the binaries its index no longer lists.
    again = run_cli("build-kernels", "--aot", "--arch", "sm_90", "--out", out, "--only", "jet.cu")
    assert again.returncode == 0 and "compiled 0, kept 1" in again.stdout, again.stdout + again.stderr
    assert len(list(out.glob("*.fatbin"))) == 1


@needs_nvcc
def test_a_compile_failure_names_the_module(tmp_path, monkeypatch):
    monkeypatch.setattr(aot, "module_code", lambda file, flags: ("this is not CUDA;\n", ("-std=c++17",)))
    with pytest.raises(BackendError, match=r"nvcc .* failed for sm_90 on jet\.cu \(-DREAL=float\): jet\.cu\(1\): "
                                           r"error"):
        aot.build_aot("sm_90", out=tmp_path, only=["jet.cu"])
    assert not list(tmp_path.glob("*.fatbin")) and not (tmp_path / "index.json").exists()


# ------------------------------------------------------------------ with a GPU and nvcc
def _device_architecture():
    import cupy

    return "sm_" + cupy.cuda.Device().compute_capability


def _buildable(architecture: str) -> bool:
    return architecture in subprocess.run([_nvcc, "--list-gpu-code"], capture_output=True, text=True).stdout.split()


@pytest.mark.gpu
@pytest.mark.skipif(gpu_count() == 0, reason="no CUDA GPU visible")
@needs_nvcc
def test_a_prebuilt_min_plus_is_loaded_and_matches_nvrtc(tmp_path, monkeypatch):
    import cupy

    from fastapsp.stages.min_plus import min_plus

    architecture = _device_architecture()
    if not _buildable(architecture):
        pytest.skip(f"nvcc does not build {architecture}")
    aot.build_aot(architecture, out=tmp_path / "prebuilt", only=["min_plus.cu"])
    rng = np.random.default_rng(5)
    a = rng.integers(0, 50, (70, 100)).astype(np.float32)
    b = rng.integers(0, 50, (100, 300)).astype(np.float32)
    a[rng.random(a.shape) < 0.1] = np.inf
    expected = (a[:, :, None] + b[None, :, :]).min(axis=1)
    results = {}
    for where in ("prebuilt", "nothing"):
        for name, empty in (("_modules", {}), ("_functions", {}), ("_prebuilt", set())):
            monkeypatch.setattr(kernels, name, empty)
        monkeypatch.setattr(binaries, "PREBUILT_DIR", tmp_path / where)
        with warnings.catch_warnings():
            warnings.simplefilter("error", PrebuiltKernelWarning)
            results[where] = cupy.asnumpy(min_plus(cupy.asarray(a), cupy.asarray(b)))  # K = 100: min_plus.cu
        used = [key for key in kernels.loaded_modules() if key[0] == "min_plus.cu"]
        assert len(used) == 1, kernels.loaded_modules()
        assert (used[0] in kernels.prebuilt_modules()) == (where == "prebuilt")
    np.testing.assert_array_equal(results["prebuilt"], results["nothing"])
    np.testing.assert_array_equal(results["prebuilt"], expected)


_SOLVE = """
import json, sys, warnings
from pathlib import Path
import numpy as np
import fastapsp
from fastapsp.kernels import binaries, catalog, loaded_modules, prebuilt_modules
binaries.PREBUILT_DIR = Path(sys.argv[1])
catalog.mark_built()  # the prebuilt folder alone: no build of the kernel cache
graph = fastapsp.read_graph(sys.argv[2])
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    np.save(sys.argv[3], fastapsp.solve(graph, backend="cupy", k=16))
    np.save(sys.argv[4], fastapsp.solve(graph, backend="cupy", k=16, sssp_method="frontier"))
print(json.dumps({"loaded": loaded_modules(), "prebuilt": prebuilt_modules(),
                  "warnings": [f"{w.category.__name__}: {w.message}" for w in caught]}))
"""


@pytest.mark.gpu
@pytest.mark.skipif(gpu_count() == 0, reason="no CUDA GPU visible")
@needs_nvcc
def test_a_solve_with_every_variant_prebuilt_matches_scipy(tmp_path):
    from scipy.sparse.csgraph import shortest_path

    import fastapsp

    architecture = _device_architecture()
    if not _buildable(architecture):
        pytest.skip(f"nvcc does not build {architecture}")
    info = aot.build_aot(architecture, out=tmp_path / "prebuilt")
    assert info["modules"] == len(variants())
    graph_file = DATA / "minnesota.mtx.gz"
    run = subprocess.run([sys.executable, "-c", _SOLVE, str(tmp_path / "prebuilt"), str(graph_file),
                          str(tmp_path / "d.npy"), str(tmp_path / "f.npy")],
                         env=cli_env(), capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads(run.stdout.strip().splitlines()[-1])
    loaded = {json.dumps(k) for k in report["loaded"]}
    assert loaded and loaded == {json.dumps(k) for k in report["prebuilt"]}, report
    assert any(k[0] == "sssp.cu" and k[2] for k in report["prebuilt"]), report  # the cooperative SSSP module
    assert not [w for w in report["warnings"] if "prebuilt" in w or "cooperative" in w], report["warnings"]
    expected = shortest_path(fastapsp.read_graph(graph_file).to_scipy(), method="D")
    for name in ("d.npy", "f.npy"):
        np.testing.assert_allclose(np.load(tmp_path / name), expected, rtol=1e-6)
