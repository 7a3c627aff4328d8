#!/usr/bin/env bash
# Session 12 on one GPU: the widened upper levels on del20-unit (benchmarks/level_tree_bench.py, both
# settings on one Jet partition), then del20-unit and roadFLA solved as issue 7's targets are timed
# (process start to exit, --output none, defaults), 32 sampled rows checked against SciPy after each.
# Results under benchmarks/results/$TAG (default h100-s12) and in $OUT/results-$TAG.tgz.
#   OUT=/tmp/out FASTAPSP_COMMIT=$(git rev-parse --short HEAD) bash benchmarks/device/issue7-s12-del20.sh
set -u
cd "$(dirname "$0")/../.."
export PYTHONUNBUFFERED=1 TAG=${TAG:-h100-s12} CHECK=${CHECK:-1}
OUT=${OUT:-/tmp/issue7-out}
DATA=benchmarks/data
mkdir -p "$OUT" "$DATA"
nvidia-smi -L
source benchmarks/device/_graphs.sh
python3 -m compileall -q -j 0 fastapsp ${PYTHONPATH//:/ } > /dev/null 2>&1
[ -z "$making" ] || wait "$making"
for g in "$FLA" "$DEL20"; do timeout 120 python3 -m fastapsp solve "$g" --output none --quiet > /dev/null 2>&1; done
save() { tar czf "$OUT/results-$TAG.tgz" "benchmarks/results/$TAG" 2>/dev/null; }
timeout 120 python3 benchmarks/level_tree_bench.py "$DEL20" --tag "$TAG" 2>&1 | grep -v -i warn; save
run() { timeout "$1" bash benchmarks/scale_device.sh run "${@:2}" 2>&1 | grep -v -i warn | grep -v "^mean"; save; }
run 90 del20-unit auto boundary-graph
run 60 roadFLA auto boundary-graph
python3 benchmarks/device/summary.py "$TAG"
