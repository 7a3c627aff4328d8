#!/usr/bin/env bash
# The scale benchmarks of the boundary-graph method on a GPU machine, one JSON per run
# under benchmarks/results/$TAG (see benchmarks/README.md).
#
#   bash benchmarks/device/_solve.sh make                  # generate the Delaunay instances
#   bash benchmarks/device/_solve.sh run NAME K METHOD...  # time NAME (k or 'auto') with the methods
#
# Environment: TAG (results folder), OUTPUTS (default none), CHECK (components checked against
# SciPy, default 2), PARTITIONER (default auto, as fastapsp solve), LAUNCHER and RANKS (MPI), WARMUP.
#
# Graphs are read from benchmarks/data/ (ignored by git): roadFLA.mtx.gz and luxembourg_osm.mtx.gz
# copied from ../shared/data, the Delaunay ones made by `make`.
set -euo pipefail
cd "$(dirname "$0")/../.."
DATA=benchmarks/data
TAG=${TAG:-pipeline}
mkdir -p "$DATA"

make_one() {  # name, then make_delaunay.py arguments
    local name=$1; shift
    [ -s "$DATA/$name.mtx" ] || (cd scripts && python3 make_delaunay.py "$@" -o "../$DATA/$name.mtx" >/dev/null)
}

case "${1:-}" in
make)
    make_one del18-euclid --scale 18 --seed 1 --weights euclidean &
    make_one del20-euclid --scale 20 --seed 1 --weights euclidean &
    make_one del20-unit --scale 20 --seed 1 &
    make_one del20-euclid-directed --scale 20 --seed 1 --weights euclidean --directed &
    make_one delaunay16r --scale 16 --seed 1 &
    wait
    ls -la "$DATA"
    ;;
run)
    name=$2; k=$3; shift 3
    path=$(ls "$DATA/$name".mtx* | head -1)
    python3 benchmarks/gpu_pipeline.py --graph "$name=$path" --k $k --sssp-method "$@" --tag "$TAG" --outputs ${OUTPUTS:-none} \
        --check "${CHECK:-2}" ${LAUNCHER:+--launcher "$LAUNCHER"} --ranks "${RANKS:-1}" ${WARMUP:+--warmup "$WARMUP"} \
        --partitioner "${PARTITIONER:-auto}"
    ;;
*)
    echo "usage: $0 make | run NAME K METHOD..." >&2
    exit 2
    ;;
esac
