#!/usr/bin/env bash
# The answers besides the whole matrix, on one GPU (about 5 minutes on an H100): the GPU tests of --stats,
# --predecessors and Jet, then on roadFLA and del20-unit `--output none` against `--stats`
# (each pair once on these undirected graphs) in the same benchmark run, `--stats` over
# the whole matrix on roadFLA for contrast, `--sources random:1000` on roadFLA (process start to
# exit), one plain `--stats` run whose printout goes in the README, and the
# dry-run estimate against the measured peak memory.
#
#   OUT=/tmp/out FASTAPSP_COMMIT=$(git rev-parse --short HEAD) bash benchmarks/device/answers.sh
#
# Needs benchmarks/data/roadFLA.mtx.gz (copied from ../shared/data); makes
# benchmarks/data/del20-unit.mtx when absent.  Results: benchmarks/results/answers/
# and a copy under $OUT, with every step's log; summary.txt says what each step gave.
set -uo pipefail  # a failing step is reported and the next one still runs
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/answers-out}
TAG=${TAG:-answers}
DATA=benchmarks/data
mkdir -p "$OUT" "$DATA"
SUMMARY="$OUT/summary.txt"
: > "$SUMMARY"
source benchmarks/device/_steps.sh  # step NAME COMMAND...

ROADFLA=$DATA/roadFLA.mtx.gz
DEL20=$DATA/del20-unit.mtx

# 1. The GPU tests of --stats, predecessors, the API and Jet's kernels.
step tests python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_reductions_gpu.py tests/test_reductions.py \
    tests/test_predecessors.py tests/test_paths_cli.py tests/test_api.py tests/test_jet.py

# 2. The Delaunay instance (pattern weights: every arc 1).
if [ ! -s "$DEL20" ]; then
    step make-del20 bash -c "cd scripts && python3 make_delaunay.py --scale 20 --seed 1 -o ../$DEL20"
fi

# 3. --output none against --stats, in one benchmark run per graph (same process, same partition).
step roadFLA-none-stats python3 benchmarks/gpu_pipeline.py --graph "roadFLA=$ROADFLA" --k auto \
    --outputs none stats --check 0 --tag "$TAG"
step del20-none-stats python3 benchmarks/gpu_pipeline.py --graph "del20-unit=$DEL20" --k auto \
    --outputs none stats --check 0 --warmup '' --tag "$TAG"
# --stats over the whole matrix (FASTAPSP_STATS_PAIRS=0), for contrast.
step roadFLA-stats-whole env FASTAPSP_STATS_PAIRS=0 python3 benchmarks/gpu_pipeline.py \
    --graph "roadFLA=$ROADFLA" --k auto --outputs stats --check 0 --warmup '' --tag "$TAG-whole"

# 4. --sources random:1000 on roadFLA, process start to exit (rows kept in memory).
step roadFLA-sources1000 python3 benchmarks/gpu_pipeline.py --graph "roadFLA=$ROADFLA" --k auto \
    --outputs sources1000 --check 0 --warmup '' --tag "$TAG"

# 5. What a million-vertex --stats run prints (for the README), and its statistics.
step roadFLA-stats-cli python3 -m fastapsp solve "$ROADFLA" --backend cupy --stats "$OUT/roadFLA-stats" \
    --report "$OUT/roadFLA-stats-report.json"

# 6. --dry-run's estimate against the measured peaks (device pool, driver, host).
step memory python3 benchmarks/memory_check.py --graph "roadFLA=$ROADFLA" --mode none stats sources1000-memory \
    --tag "$TAG"

mkdir -p "$OUT/results"
cp -r "benchmarks/results/$TAG" "benchmarks/results/$TAG-whole" "$OUT/results/" 2>/dev/null
python3 - "$OUT" "$TAG" <<'EOF' | tee -a "$SUMMARY"
import json, pathlib, sys
out, tag = pathlib.Path(sys.argv[1]), sys.argv[2]
runs = {}
for folder in sorted((out / "results").glob("*")):
    for path in sorted(folder.glob("*.json")):
        data = json.loads(path.read_text())
        if "total_seconds" in data:
            runs[(folder.name, data["graph"], data["output"])] = data["total_seconds"]
        elif data.get("benchmark") == "memory_check":
            print(f"memory {data['graph']} {data['mode']}: estimate {data['estimate']['device_peak_bytes'] / 2**30:.2f} GiB, "
                  f"live peak {data['measured']['pool_live_peak_bytes'] / 2**30:.2f} GiB, ratio "
                  f"{data['ratio']['device_live_over_estimate']}, within 25%: {data['within_25_percent']}")
for graph in ("roadFLA", "del20-unit"):
    none, stats = runs.get((tag, graph, "none")), runs.get((tag, graph, "stats"))
    if none and stats:
        print(f"{graph}: --output none {none:.2f} s, --stats {stats:.2f} s: {100 * (stats / none - 1):+.1f}%")
whole = runs.get((tag + "-whole", "roadFLA", "stats"))
if whole:
    print(f"roadFLA: --stats over the whole matrix {whole:.2f} s")
if (tag, "roadFLA", "sources1000") in runs:
    print(f"roadFLA: --sources random:1000 {runs[(tag, 'roadFLA', 'sources1000')]:.2f} s process start to exit")
EOF
cat "$OUT/roadFLA-stats-cli.log" >> "$SUMMARY"
echo "summary: $SUMMARY"
exit $failed
