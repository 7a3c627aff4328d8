"""benchmarks/scaling_model.py on the stored reports: the laws give back what was measured on one GPU, more
GPUs never take longer, and every stored multi-GPU report is checked."""

import importlib.util
import json
import math

import pytest

from cli_util import ROOT

INPUTS = ROOT / "benchmarks" / "results" / "scaling" / "inputs"


@pytest.fixture(scope="module")
def model():
    spec = importlib.util.spec_from_file_location("scaling_model", ROOT / "benchmarks" / "scaling_model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def tables(model, tmp_path_factory):
    out = tmp_path_factory.mktemp("model") / "model.json"
    assert model.main(["--json", str(out)]) == 0
    return json.loads(out.read_text())


def test_every_target_on_every_gpu_count(tables, model):
    names = {(t["graph"], t["device"]) for t in tables["predictions"]}
    assert {"del21-unit", "del22-unit", "road-24M"} <= {g for g, _ in names}
    for t in tables["predictions"]:
        totals = [row["total"] for row in t["rows"]]
        assert [row["p"] for row in t["rows"]] == list(model.GPUS)
        assert all(a >= b for a, b in zip(totals, totals[1:])), t["graph"]
        assert all(row["serial"] <= row["total"] + 1e-9 for row in t["rows"])


def test_one_gpu_prediction_of_a_reference_is_its_measurement(tables, model):
    refs = model.references(model.load(sorted(INPUTS.glob("*.json"))))
    ref = refs[("del21-unit", "NVIDIA H200")]
    row = next(t for t in tables["predictions"] if t["graph"] == "del21-unit" and t["device"] == "NVIDIA H200")
    assert math.isclose(row["rows"][0]["total"], ref["total_seconds"] + ref["startup_seconds"], rel_tol=1e-6)


def test_the_laws_scale_each_stage(model):
    ref = {"n": 100, "m": 300, "k": 10, "boundary_vertices": 20, "total_seconds": 10.0,
           "stages": {"read": 1.0, "local_fw": 1.0, "boundary_graph": 1.0, "boundary_rows": 1.0, "min_plus": 1.0,
                      "extract": 1.0}}
    target = {"n": 200, "m": 600, "k": 20, "c": 10.0, "B": 40, "b": 2.0}
    got = model.scaled_stages(ref, target, 2.0)
    assert got["read"] == 2 and got["local_fw"] == 2 and got["boundary_graph"] == 4
    assert got["boundary_rows"] == 4 and got["min_plus"] == 4 and got["extract"] == 2 and got["other"] == 4
    rows = model.predict(got, target, 4, None, 0.5)
    assert rows["imbalance"] == 1.0 and math.isclose(rows["divided"], (4 + 4 + 2) / 4)
    assert math.isclose(rows["total"], 0.5 + 2 + 2 + 4 + 4 + 10 / 4)
    assert model.predict(got, {**target, "k": 6}, 4, None, 0.0)["imbalance"] == pytest.approx(8 / 6, abs=1e-4)


def test_every_multi_gpu_report_is_checked(tables, model):
    multi = [r for r in model.load(sorted(INPUTS.glob("*.json"))) if r["ranks"] > 1]
    assert len(tables["checks"]) == len(multi) >= 5
    for check in tables["checks"]:
        assert check["measured"] > 0 and check["predicted"] > 0
        assert abs(check["relative_error"]) < 0.6, check


def test_gpu_to_gpu_closures_divide_the_closing_within_one_node(model):
    """With a GPU-to-GPU rate the upper levels below the top divide on p <= NODE_GPUS ranks, and the local
    closures too where their rows travel (their bytes at that rate); beyond one node, or without a rate, the
    schedules stay as before."""
    stages = {"read": 1.0, "choose_k": 0.5, "partition": 1.0, "local_fw": 2.0, "boundary_graph": 3.0,
              "min_plus": 40.0, "other": 0.0}
    spec = {"n": 1000, "m": 3000, "k": 100, "c": 10.0, "B": 200.0, "b": 2.0}
    ref = {"upper_levels": [{"close": 1.0}, {"close": 1.0}, {"close": 2.0}]}  # the top: half the closing
    top = model.top_share(ref)
    assert top == pytest.approx(0.5)
    assert model.top_share({}) == 1.0
    assert model.top_share({"upper_levels": [[{"close": 1.0}, {"close": 3.0}], [{"close": 9.0}]]}) == 0.75
    plain = model.predict(stages, spec, 2, None, 0.0)
    fast = model.predict(stages, spec, 2, None, 0.0, peer=1e12, top=top)
    traffic = spec["B"] * spec["c"] * model.BYTES_PER_DISTANCE / 1e12
    assert fast["gpu_to_gpu"] == pytest.approx(plain["total"] - 2.0 * 0.5 - 3.0 * 0.5 * 0.5 + traffic)
    assert fast["schedule"] == "closures shared GPU to GPU" and fast["total"] == fast["gpu_to_gpu"]
    assert fast["gpu_to_gpu_levels"] == pytest.approx(plain["total"] - 3.0 * 0.5 * 0.5)
    slow = model.predict(stages, spec, 2, None, 0.0, peer=1.0, top=top)  # one byte a second: not worth it
    assert slow["total"] == plain["total"] and slow["schedule"] == plain["schedule"]
    # A run is checked against what it did: with a link its upper levels were shared; its local closures
    # travelled only where it says so.
    assert model.checked_prediction(fast, "every rank closes every component") == \
        ("every rank closes every component, upper levels GPU to GPU", fast["gpu_to_gpu_levels"])
    assert model.checked_prediction(fast, "each rank closes its share") == \
        ("each rank closes its share, GPU to GPU", fast["gpu_to_gpu"])
    assert model.checked_prediction(plain, "every rank closes every component")[1] == plain["close_everywhere"]
    beyond = model.predict(stages, spec, model.NODE_GPUS * 2, None, 0.0, peer=1e12, top=top)
    assert "gpu_to_gpu" not in beyond
    assert model.peer_rate([{"peer_bytes_per_second": 3e10}, {"peer_bytes_per_second": None},
                            {"peer_bytes_per_second": 1e11}, {}, {"peer_bytes_per_second": 5e10}]) == 5e10
    assert model.peer_rate([{}]) is None


def test_upper_levels_law_predicts_the_measured_del22_from_del21(model):
    """The default law (the cost model's upper levels) takes del21-unit's one-rank boundary_graph on four
    H200s (3d3793b) to del22-unit's shape: within 10% of del22-unit's measured 5.78 s on the same host.
    (The power laws tried before, B^1.5 and B^2.52, gave 4.0 and 8.1 s.)"""
    folder = ROOT / "benchmarks" / "results" / "four-gpus-3d3793b"
    ref = model.load([folder / "del21-unit-k2435-none-auto-r1.json"])[0]
    measured = model.load([folder / "del22-unit-k4096-none-auto-r1.json"])[0]
    spec = model.spec_of(measured)
    got = model.scaled_stages(ref, spec)["boundary_graph"]
    assert got == pytest.approx(measured["stages"]["boundary_graph"], rel=0.10)
    assert model.scaled_stages(ref, spec, 1.5)["boundary_graph"] < 0.75 * measured["stages"]["boundary_graph"]


def test_a_plain_solve_report_names_its_graph_as_the_benchmarks_do(model, tmp_path):
    """``fastapsp solve del21-unit.mtx --report`` names the file; the model reads it as del21-unit."""
    report = json.loads(sorted(INPUTS.glob("two-gpus-del21-*-r1.json"))[0].read_text())
    path = tmp_path / "plain.json"
    path.write_text(json.dumps({**report, "graph": "/data/del21-unit.mtx.gz"}))
    loaded = model.load([path])
    assert loaded[0]["graph"] == "del21-unit"
    assert ("del21-unit", "NVIDIA H200") in model.references(loaded)
    assert [model.graph_name(n) for n in ("roadFLA.mtx", "g.graph", "road-24M")] == ["roadFLA", "g", "road-24M"]


def test_mpi_start_is_the_median_excess_of_the_multi_rank_starts(model):
    """What MPI's start adds: the multi-rank runs' process start less their reference's (the median), added
    to the serial seconds of more than one rank only."""
    refs = {("g", "GPU"): {"startup_seconds": 0.25}, ("h", "GPU"): {"startup_seconds": 0.3}}
    reports = [{"graph": "g", "device": "GPU", "ranks": 2, "startup_seconds": 0.55},
               {"graph": "g", "device": "GPU", "ranks": 4, "startup_seconds": 0.75},
               {"graph": "h", "device": "GPU", "ranks": 2, "startup_seconds": 0.6},
               {"graph": "x", "device": "GPU", "ranks": 2, "startup_seconds": 9.0},  # no reference: left out
               {"graph": "g", "device": "GPU", "ranks": 1, "startup_seconds": 0.2}]
    assert model.mpi_start(reports, refs) == pytest.approx(0.3)
    assert model.mpi_start(reports[:2], refs) == pytest.approx(0.4)
    assert model.mpi_start(reports[3:], refs) == 0.0
    stages = {"read": 1.0, "min_plus": 8.0, "other": 0.0}
    spec = {"n": 100, "m": 300, "k": 8, "c": 12.5, "B": 16.0, "b": 2.0}
    one, two = (model.predict(stages, spec, p, None, 0.25, mpi=0.3) for p in (1, 2))
    assert one["total"] == pytest.approx(0.25 + 1 + 8) and two["total"] == pytest.approx(0.25 + 0.3 + 1 + 4)


def test_the_checks_count_mpis_start(tables):
    assert tables["mpi_start_seconds"] > 0
    assert all(miss[0] != "startup" or abs(miss[1]) < 0.2 for check in tables["checks"]
               for miss in check["largest_misses"])
