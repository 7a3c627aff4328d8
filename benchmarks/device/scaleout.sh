#!/usr/bin/env bash
# Scale-out on the GPUs of one host: each graph of GRAPHS on each rank count of RANKS_LIST, one rank per
# GPU, the defaults (k by the cost model, --partitioner auto), process start to exit (gpu_pipeline.py).
# Every timed run checks VERIFY sampled rows of its own result against SciPy on the ranks that made them
# (`--verify`, its seconds recorded apart as verify_seconds); with CHECK=N the one-rank run of each graph
# also checks 32 rows of N components computed in-process.  The runs go one after the other: runs side by
# side on one host share its CPUs and memory and run slower.  Then the scaling model (scaling_model.py) on
# these runs: its predictions beside the measured figures, in $TAG/model.json.
#   OUT=/tmp/out FASTAPSP_COMMIT=$(git rev-parse --short HEAD) RANKS_LIST="1 2 4" \
#       GRAPHS="roadFLA del21-unit del22-unit" bash benchmarks/device/scaleout.sh
# Graphs: roadFLA from shared/data; del21-unit and del22-unit made by scripts/make_delaunay.py
# (--scale 21/22 --seed 1, in the background while the kernels are built).  HOST_BASELINE=1: every run
# of several ranks again with the closures sent through the host (benchmarks/closures_through_host.py,
# host-GRAPH-ranksR.json), the baseline of the GPU-to-GPU copies.  DRY=1: a CPU dry run on
# tiny graphs (NumPy, 1 and 2 ranks of the MPI launcher found on PATH).
set -u
cd "$(dirname "$0")/../.."
source benchmarks/device/_setup.sh
RANKS_LIST=${RANKS_LIST:-1 2 4}
GRAPHS=${GRAPHS:-roadFLA del21-unit del22-unit}
TAG=${TAG:-scaleout}
VERIFY=${VERIFY:-4}
CHECK=${CHECK:-0}
OUT=${OUT:-/tmp/scaleout-out}
DATA=benchmarks/data
BACKEND=cupy
MPI_FLAGS="--bind-to none -x PYTHONPATH -x OMPI_ALLOW_RUN_AS_ROOT -x OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"  # Open MPI
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$OUT" "$DATA" "benchmarks/results/$TAG"
if [ "${DRY:-0}" = 1 ]; then
    BACKEND=numpy
    MPI_FLAGS=""  # whichever MPI this machine has
    GRAPHS=${DRY_GRAPHS:-minnesota}
    cp tests/data/minnesota.mtx.gz "$DATA/minnesota.mtx.gz" 2>/dev/null
else
    nvidia-smi -L
    copy_data roadFLA
fi
declare -A making=()
for g in $GRAPHS; do  # the Delaunay graphs, made in the background
    case $g in del2[0-9]-unit)
        scale=${g#del}; scale=${scale%-unit}
        if [ ! -s "$DATA/$g.mtx" ]; then
            ( "$PYTHON" scripts/make_delaunay.py --scale "$scale" --seed 1 -o "$DATA/$g.part.mtx" \
                && mv "$DATA/$g.part.mtx" "$DATA/$g.mtx" ) > "$OUT/make-$g.txt" 2>&1 &
            making[$g]=$!
        fi;;
    esac
done
if [ "${DRY:-0}" != 1 ]; then  # every kernel compiled before anything is timed
    ( time "$PYTHON" -m fastapsp build-kernels ) > "$OUT/build-kernels.txt" 2>&1
    tail -3 "$OUT/build-kernels.txt"
fi
save() { tar czf "$OUT/results-$TAG.tgz" "benchmarks/results/$TAG" 2>/dev/null; }
one() {  # graph, path, ranks: one timed run (gpu_pipeline.py), its lines on stdout
    local g=$1 path=$2 r=$3 launcher="" check=0
    [ "$r" = 1 ] || launcher="mpirun -n $r $MPI_FLAGS"
    [ "$r" = 1 ] && check=$CHECK
    timeout "${RUN_TIMEOUT:-590}" "$PYTHON" benchmarks/gpu_pipeline.py --graph "$g=$path" --k auto --sssp-method auto \
        --tag "$TAG" --outputs none --check "$check" --verify "$VERIFY" --warmup "" --backend "$BACKEND" \
        ${launcher:+--launcher "$launcher"} --ranks "$r" 2>&1 | grep -v -i warn | grep -v "^mean"
}
for g in $GRAPHS; do
    [ -z "${making[$g]:-}" ] || wait "${making[$g]}"
    path=$(ls "$DATA/$g".mtx 2>/dev/null || ls "$DATA/$g".mtx.gz 2>/dev/null | head -1)
    [ -n "$path" ] || { echo "note: $g missing (skipped)"; continue; }
    # untimed: the binary graph cache written beside the file, so that every timed run maps it alike
    "$PYTHON" -c "import sys, fastapsp.io as io; io.read_graph(sys.argv[1], cache='auto')" "$path" > /dev/null 2>&1
    for r in $RANKS_LIST; do
        one "$g" "$path" "$r"; save
        if [ "${HOST_BASELINE:-0}" = 1 ] && [ "$r" != 1 ]; then  # the same run, closures through the host
            start=$("$PYTHON" -c 'import time; print(time.time())')
            timeout "${RUN_TIMEOUT:-590}" mpirun -n "$r" $MPI_FLAGS "$PYTHON" benchmarks/closures_through_host.py -- \
                solve "$path" --output none --quiet --verify "$VERIFY" --backend "$BACKEND" \
                --report "benchmarks/results/$TAG/host-$g-ranks$r.json" > "$OUT/host-$g-ranks$r.txt" 2>&1
            echo "$g r$r closures through the host: rc=$? $("$PYTHON" -c "import time; print(round(time.time() - $start, 2))") s"
            save
        fi
    done
done
"$PYTHON" benchmarks/scaling_model.py --reports benchmarks/results/$TAG/*-r[0-9]*.json \
    --json "benchmarks/results/$TAG/model.json" | tee "$OUT/model-$TAG.txt"
save
