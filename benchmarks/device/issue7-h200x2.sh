#!/usr/bin/env bash
# Multi-GPU runs of issue 7 on 2 x H200 (4 x H200 was not lent): roadFLA and del20-unit with one
# rank and with `mpirun -n 2`, the defaults (k by the cost model, --partitioner auto: Jet on rank 0's
# GPU), one component's 32 sampled rows checked against SciPy after every run.
#   OUT=/tmp/out FASTAPSP_COMMIT=$(git rev-parse --short HEAD) bash benchmarks/device/issue7-h200x2.sh
set -u
cd "$(dirname "$0")/../.."
export PYTHONUNBUFFERED=1 TAG=${TAG:-h200x2-s9} CHECK=${CHECK:-1}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
OUT=${OUT:-/tmp/issue7-out}
mkdir -p "$OUT"
nvidia-smi -L
save() { tar czf "$OUT/results.tgz" "benchmarks/results/$TAG" 2>/dev/null; }
run() { timeout "$1" bash benchmarks/scale_device.sh run "${@:2}" 2>&1 | grep -v -i warn | grep -v "^mean"; save; }
[ -s benchmarks/data/del20-unit.mtx ] || python3 scripts/make_delaunay.py --scale 20 --seed 1 \
    -o benchmarks/data/del20-unit.mtx > /dev/null & MK=$!
M="mpirun -n 2 --bind-to none -x PYTHONPATH -x OMPI_ALLOW_RUN_AS_ROOT -x OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"
run 90 roadFLA auto boundary-graph
LAUNCHER="$M" RANKS=2 run 90 roadFLA auto boundary-graph
wait $MK
run 120 del20-unit auto boundary-graph
LAUNCHER="$M" RANKS=2 run 120 del20-unit auto boundary-graph
python3 - "$TAG" <<'PY'
import json, glob, sys
for f in sorted(glob.glob(f'benchmarks/results/{sys.argv[1]}/*-k*.json')):
    d = json.load(open(f)); s = d['stages']
    print(d['graph'], d['k'], d['partitioner'], d['ranks'], round(d['total_seconds'], 2),
          {a: round(b, 2) for a, b in s.items() if b > 0.01}, (d.get('exactness_check') or {}).get('exact'), d['device'])
PY
