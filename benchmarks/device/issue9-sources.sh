#!/usr/bin/env bash
# Issue 9, `--sources random:1000` on roadFLA (about 2 minutes on an H100): the GPU tests of --sources,
# the benchmark (process start to exit, `gpu_pipeline.py --outputs sources1000`, rows checked against
# SciPy), two more timed CLI runs with their stages, the rows of both methods compared at scale, and
# `--dry-run`'s estimate against the measured device and host peaks (memory_check.py).
#
#   OUT=/tmp/out FASTAPSP_COMMIT=$(git rev-parse --short HEAD) bash benchmarks/device/issue9-sources.sh
#
# Needs benchmarks/data/roadFLA.mtx.gz.  Results: benchmarks/results/h100-sources/ and a copy under
# $OUT, with every step's log; summary.txt says what each step gave.
set -uo pipefail  # a failing step is reported and the next one still runs
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/issue9-sources-out}
TAG=${TAG:-h100-sources}
ROADFLA=benchmarks/data/roadFLA.mtx.gz
mkdir -p "$OUT"
SUMMARY="$OUT/summary.txt"
: > "$SUMMARY"
source benchmarks/device/_steps.sh  # step NAME COMMAND...

{ echo "host: $(nproc) cores; transparent huge pages: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)"
  nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null; } | tee -a "$SUMMARY"

# 1. The GPU tests of --sources (also the warm-up: they compile the SSSP and min-plus kernels).
step tests python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_sources.py

# 2. The benchmark: process start to exit, 32 of the 1,000 rows against SciPy's Dijkstra.
step sources1000 python3 benchmarks/gpu_pipeline.py --graph "roadFLA=$ROADFLA" --k auto --outputs sources1000 \
    --check 1 --tag "$TAG"

# 3. Two more runs of the same command line, timed here, with the stages of their reports.
step cli-runs python3 - "$ROADFLA" "$OUT" <<'EOF'
import json, subprocess, sys, time
graph, out = sys.argv[1], sys.argv[2]
for run in (1, 2):
    report = f"{out}/cli-report-{run}.json"
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "fastapsp", "solve", graph, "--sources", "random:1000",
                           "--output", "memory", "--quiet", "--report", report], capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode:
        sys.exit(f"run {run} failed: {proc.stderr.strip()}")
    data = json.loads(open(report).read())
    stages = {k: round(v, 3) for k, v in data["stages"].items() if v >= 0.001}
    print(f"run {run}: process {seconds:.2f} s, solve {data['total_seconds']:.2f} s, "
          f"sources_method {data.get('sources_method')}, stages {stages}")
EOF

# 4. At scale: the rows by SSSP from the sources and by the pipeline (boundary-graph method, the local
#    closures of the components holding a source) are the same; 16 of them against SciPy.
step methods-agree python3 - "$ROADFLA" <<'EOF'
import sys, time
import numpy as np
from scipy.sparse.csgraph import dijkstra
import fastapsp
from fastapsp.sources import parse_sources
graph = fastapsp.read_graph(sys.argv[1])
start = time.perf_counter()
by_sssp = fastapsp.solve(graph, sources="random:1000", backend="cupy", sources_method="sssp")
middle = time.perf_counter()
by_pipeline = fastapsp.solve(graph, sources="random:1000", backend="cupy", sources_method="pipeline",
                             sssp_method="boundary-graph")
end = time.perf_counter()
print(f"in-process: sssp {middle - start:.2f} s, pipeline (boundary-graph) {end - middle:.2f} s")
same = np.array_equal(by_sssp, by_pipeline)
ids = parse_sources("random:1000", graph.n)
pick = np.sort(np.random.default_rng(1).choice(ids.size, 16, replace=False))
ref = dijkstra(graph.to_scipy(), indices=ids[pick]).astype(by_sssp.dtype)
exact = np.array_equal(ref, by_sssp[pick])
print(f"methods agree on all 1000 x {graph.n} rows: {same}; 16 rows equal SciPy: {exact}")
sys.exit(0 if same and exact else 1)
EOF

# 5. --dry-run's estimate against the measured peaks, for the default run and for the pipeline.
step memory python3 benchmarks/memory_check.py --graph "roadFLA=$ROADFLA" --mode sources1000-memory \
    sources1000-pipeline --tag "$TAG"

mkdir -p "$OUT/results"
cp -r "benchmarks/results/$TAG" "$OUT/results/" 2>/dev/null
python3 - "$OUT" "$TAG" <<'EOF' | tee -a "$SUMMARY"
import json, pathlib, sys
out, tag = pathlib.Path(sys.argv[1]), sys.argv[2]
for path in sorted((out / "results" / tag).glob("*.json")):
    data = json.loads(path.read_text())
    if "total_seconds" in data:
        stages = {k: round(v, 3) for k, v in data["stages"].items() if v >= 0.001}
        print(f"{data['graph']} {data['output']}: process start to exit {data['total_seconds']:.2f} s "
              f"(solve {data['solve_seconds']:.2f} s, {data.get('sources_method')}), stages {stages}, "
              f"check {data.get('exactness_check')}")
    elif data.get("benchmark") == "memory_check":
        e, m, r = data["estimate"], data["measured"], data["ratio"]
        print(f"memory {data['mode']} ({data.get('sources_method')}): device estimate "
              f"{e['device_peak_bytes'] / 2**30:.2f} GiB, live peak {m['pool_live_peak_bytes'] / 2**30:.2f} GiB "
              f"(ratio {r['device_live_over_estimate']}, within 25%: {data['within_25_percent']}); host estimate "
              f"{e['host_bytes'] / 2**30:.2f} GiB, added {m['host_added_bytes'] / 2**30:.2f} GiB "
              f"(ratio {r['host_added_over_estimate']}, within 25%: {data.get('host_within_25_percent')})")
EOF
echo "summary: $SUMMARY"
exit $failed
