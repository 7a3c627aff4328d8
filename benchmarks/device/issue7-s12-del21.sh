#!/usr/bin/env bash
# Session 12, del21-unit (Delaunay 2^21, seed 1, unit weights): with BENCH=1 (default)
# benchmarks/level_tree_bench.py first (the upper levels with and without widening, one partition), then
# del21-unit solved on one rank and on `mpirun -n $GPUS` (default 2), defaults, 32 sampled rows checked
# against SciPy after each; the kernel cache filled by an untimed del18-unit solve.  Results under
# benchmarks/results/$TAG (default h200x$GPUS-s12-tree) and in $OUT/results-$TAG.tgz.  Its first version,
# without the bench, made results/h200x2-s12-scale (TAG=h200x2-s12-scale BENCH=0, at 7306478).
#   OUT=/tmp/out FASTAPSP_COMMIT=$(git rev-parse --short HEAD) GPUS=2 bash benchmarks/device/issue7-s12-del21.sh
set -u
cd "$(dirname "$0")/../.."
GPUS=${GPUS:-2}
export PYTHONUNBUFFERED=1 TAG=${TAG:-h200x$GPUS-s12-tree} CHECK=${CHECK:-1}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
OUT=${OUT:-/tmp/issue7-out}
DATA=benchmarks/data
mkdir -p "$OUT" "$DATA"
nvidia-smi -L
python3 -m compileall -q -j 0 fastapsp ${PYTHONPATH//:/ } > /dev/null 2>&1
[ -s "$DATA/del21-unit.mtx" ] || timeout 200 python3 scripts/make_delaunay.py --scale 21 --seed 1 -o "$DATA/del21-unit.mtx" &
[ -s "$DATA/del18-unit.mtx" ] || timeout 60 python3 scripts/make_delaunay.py --scale 18 --seed 1 -o "$DATA/del18-unit.mtx"
timeout 60 python3 -m fastapsp solve "$DATA/del18-unit.mtx" --output none --quiet > /dev/null 2>&1
wait
save() { tar czf "$OUT/results-$TAG.tgz" "benchmarks/results/$TAG" 2>/dev/null; }
[ "${BENCH:-1}" = 0 ] || { timeout 200 python3 benchmarks/level_tree_bench.py "$DATA/del21-unit.mtx" --tag "$TAG" 2>&1 \
    | grep -v -i warn; save; }
M="mpirun -n $GPUS --bind-to none -x PYTHONPATH -x OMPI_ALLOW_RUN_AS_ROOT -x OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"
run() { timeout "$1" bash benchmarks/scale_device.sh run "${@:2}" 2>&1 | grep -v -i warn | grep -v "^mean"; save; }
run 150 del21-unit auto boundary-graph
LAUNCHER="$M" RANKS=$GPUS run 120 del21-unit auto boundary-graph
python3 benchmarks/device/summary.py "$TAG"
