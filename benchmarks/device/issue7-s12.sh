#!/usr/bin/env bash
# Session 12 on $GPUS GPUs (default 2): what a run costs before any work (benchmarks/launch_floor.py, one
# process and $GPUS ranks under mpirun), then roadFLA and del20-unit on one rank and on $GPUS
# (benchmarks/device/issue7-multigpu.sh; VARIANTS as there).  Results under
# benchmarks/results/$TAG (default h200x$GPUS-s12) and in $OUT/results-$TAG*.tgz.
#   OUT=/tmp/out FASTAPSP_COMMIT=$(git rev-parse --short HEAD) GPUS=2 bash benchmarks/device/issue7-s12.sh
set -u
cd "$(dirname "$0")/../.."
export GPUS=${GPUS:-2} TAG=${TAG:-h200x${GPUS:-2}-s12} OUT=${OUT:-/tmp/issue7-out}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
VARIANTS=${VARIANTS-} bash benchmarks/device/issue7-multigpu.sh
timeout 150 python3 benchmarks/launch_floor.py --ranks "$GPUS" --repeat 5 --tag "$TAG" \
    --launcher "mpirun -n $GPUS --bind-to none -x PYTHONPATH -x OMPI_ALLOW_RUN_AS_ROOT -x OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"
tar czf "$OUT/results-$TAG.tgz" "benchmarks/results/$TAG"
