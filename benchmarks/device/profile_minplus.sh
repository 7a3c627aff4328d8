#!/usr/bin/env bash
# Nsight Compute on the min-plus kernels of whole runs: for each graph of GRAPHS, `fastapsp solve GRAPH
# --output none` under ncu, COUNT launches of the component min-plus kernels (names starting min_plus) after SKIP others profiled with
# the speed-of-light, occupancy, launch, warp-state and memory sections (clocks left alone), written as CSV
# to $OUT/ncu-GRAPH.csv and summarised per launch by benchmarks/ncu_summary.py (kernel, grid, duration, throughputs,
# occupancy, the top stall reasons) into benchmarks/results/kernels/ncu-GRAPH.json.
#   OUT=/tmp/out GRAPHS="roadNY roadFLA" bash benchmarks/device/profile_minplus.sh
set -u
cd "$(dirname "$0")/../.."
source benchmarks/device/_setup.sh
GRAPHS=${GRAPHS:-roadNY roadFLA}
SKIP=${SKIP:-20}
COUNT=${COUNT:-12}
OUT=${OUT:-/tmp/profile-out}
NCU=${NCU:-$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)}
mkdir -p "$OUT" benchmarks/results/kernels
copy_data $GRAPHS
for g in $GRAPHS; do
    path=benchmarks/data/$g.mtx.gz
    [ -s "$path" ] || continue
    "$PYTHON" -m fastapsp solve "$path" --output none --quiet --report "$OUT/report-$g.json" > /dev/null 2>&1  # kernels built
    timeout 280 "$NCU" --clock-control none --target-processes all --kernel-name regex:^min_plus \
        --launch-skip "$SKIP" --launch-count "$COUNT" \
        --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
        --section MemoryWorkloadAnalysis --csv --page raw \
        "$PYTHON" -m fastapsp solve "$path" --output none --quiet > "$OUT/ncu-$g.csv" 2> "$OUT/ncu-$g.err"
    echo "$g: ncu exit $?, $(wc -l < "$OUT/ncu-$g.csv") lines"
    "$PYTHON" benchmarks/ncu_summary.py "$OUT/ncu-$g.csv" --graph "$g" --report "$OUT/report-$g.json" \
        --json "benchmarks/results/kernels/ncu-$g.json" || tail -5 "$OUT/ncu-$g.err"
    cp "benchmarks/results/kernels/ncu-$g.json" "$OUT/" 2>/dev/null
done
