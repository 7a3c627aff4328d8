#!/usr/bin/env bash
# One GPU, end to end: the single-GPU target graphs, process start to exit, --output none, the
# default partitioner (auto), one component's 32 sampled rows checked against SciPy per run.
#   OUT=/tmp/out FASTAPSP_COMMIT=$(git rev-parse --short HEAD) bash benchmarks/device/pipeline.sh [1|2]
# Part 1: roadFLA (and with METIS), luxembourg_osm, delaunay16r; part 2: the 2^18 and 2^20 Delaunay
# graphs, made first (nothing else runs beside the timed runs); both when no part is named.
# The package and the wheels' modules are byte-compiled first, as pip does when it installs: the lent
# machines do not write bytecode, so without it every run compiles ~150 modules (0.3-0.4 s).
# Needs benchmarks/data/{roadFLA,luxembourg_osm}.mtx.gz.
set -u
cd "$(dirname "$0")/../.."
export PYTHONUNBUFFERED=1 TAG=${TAG:-pipeline} CHECK=${CHECK:-1}
OUT=${OUT:-/tmp/pipeline-out}
mkdir -p "$OUT"
python3 -m compileall -q -j 0 fastapsp ${PYTHONPATH//:/ } > /dev/null 2>&1
save() { tar czf "$OUT/results.tgz" "benchmarks/results/$TAG" "benchmarks/results/$TAG-metis" 2>/dev/null; }
run() { timeout "$1" bash benchmarks/device/_solve.sh run "${@:2}" 2>&1 | grep -v -i warn | grep -v "^mean"; save; }
make_one() {  # name, then make_delaunay.py arguments
    [ -s "benchmarks/data/$1.mtx" ] || (cd scripts && timeout 150 python3 make_delaunay.py "${@:2}" \
        -o "../benchmarks/data/$1.mtx" > /dev/null)
}
# Untimed runs first: the kernels a graph needs are compiled once per machine, and the targets are
# for a warm kernel cache (the benchmark's own warm-up solves a small graph, which needs fewer of them).
warm() { timeout 90 python3 -m fastapsp solve "benchmarks/data/$1" --output none --quiet > /dev/null 2>&1; }
PART=${1:-all}
if [ "$PART" != 2 ]; then
make_one delaunay16r --scale 16 --seed 1
warm roadFLA.mtx.gz
run 60 roadFLA auto boundary-graph
PARTITIONER=metis TAG=$TAG-metis run 60 roadFLA auto boundary-graph
run 60 luxembourg_osm "16 32 64" boundary-graph
run 60 delaunay16r "8 16 32" boundary-graph
fi
if [ "$PART" != 1 ]; then
make_one del18-euclid --scale 18 --seed 1 --weights euclidean &
make_one del20-euclid --scale 20 --seed 1 --weights euclidean &
make_one del20-unit --scale 20 --seed 1 &
make_one del20-euclid-directed --scale 20 --seed 1 --weights euclidean --directed &
wait
warm del18-euclid.mtx
warm del20-unit.mtx
run 90 del20-unit auto boundary-graph
run 40 del18-euclid auto boundary-graph
run 90 del20-euclid auto boundary-graph
run 90 del20-euclid-directed auto boundary-graph
fi
python3 benchmarks/device/summary.py "$TAG"
