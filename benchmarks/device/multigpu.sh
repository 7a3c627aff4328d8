#!/usr/bin/env bash
# Several GPUs of one host: roadFLA and del20-unit with one rank and with `mpirun -n $GPUS`
# (default 2), the defaults (k by the cost model, --partitioner auto: Jet on rank 0's GPU), one
# component's 32 sampled rows checked against SciPy after every run.  Results under
# benchmarks/results/$TAG (default multigpu-$GPUS) and in $OUT/results-$TAG.tgz.  VARIANTS="VAR=VALUE ...":
# the runs of several ranks again with each variable set (e.g. FASTAPSP_SUPERVISE=0), under $TAG-<var><value>.
#   OUT=/tmp/out FASTAPSP_COMMIT=$(git rev-parse --short HEAD) GPUS=2 bash benchmarks/device/multigpu.sh
set -u
cd "$(dirname "$0")/../.."
GPUS=${GPUS:-2}
export PYTHONUNBUFFERED=1 TAG=${TAG:-multigpu-$GPUS} CHECK=${CHECK:-1}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
OUT=${OUT:-/tmp/multigpu-out}
DATA=benchmarks/data
mkdir -p "$OUT" "$DATA"
nvidia-smi -L
save() { tar czf "$OUT/results-$TAG.tgz" "benchmarks/results/$TAG" 2>/dev/null; }  # one archive per TAG
run() { timeout "$1" bash benchmarks/device/_solve.sh run "${@:2}" 2>&1 | grep -v -i warn | grep -v "^mean"; save; }
source benchmarks/device/_graphs.sh  # roadFLA's file, and del20-unit's (made in the background when absent)
M="mpirun -n $GPUS --bind-to none -x PYTHONPATH -x OMPI_ALLOW_RUN_AS_ROOT -x OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"
# Byte-compiled as pip would (the lent machines write no bytecode), the graphs made and the kernel
# cache filled by untimed runs before anything is timed (since 2026-11-22; earlier runs made
# del20-unit beside the roadFLA runs).
python3 -m compileall -q -j 0 fastapsp ${PYTHONPATH//:/ } > /dev/null 2>&1
[ -z "$making" ] || wait "$making"
for g in "$FLA" "$DEL20"; do timeout 120 python3 -m fastapsp solve "$g" --output none --quiet > /dev/null 2>&1; done
run 90 roadFLA auto boundary-graph
LAUNCHER="$M" RANKS=$GPUS run 90 roadFLA auto boundary-graph
run 120 del20-unit auto boundary-graph
LAUNCHER="$M" RANKS=$GPUS run 120 del20-unit auto boundary-graph
for v in ${VARIANTS:-}; do  # the ranks' runs again with one variable set, e.g. FASTAPSP_SUPERVISE=0, under $TAG-<v>
    name=${v%%=*}; tag="$TAG-$(echo "${name#FASTAPSP_}${v#*=}" | tr 'A-Z_' 'a-z-')"
    ( export "$v" TAG="$tag" LAUNCHER="$M -x $name" RANKS=$GPUS
      run 90 roadFLA auto boundary-graph
      run 120 del20-unit auto boundary-graph )
    python3 benchmarks/device/summary.py "$tag"
done
python3 benchmarks/device/summary.py "$TAG"
