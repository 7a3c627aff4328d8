#!/usr/bin/env bash
# Issue 7 on one H100 with the default partitioner `auto` (Jet on the GPU from 2^19 vertices):
# every graph of the issue, process start to exit, --output none, one component's 32 sampled rows
# checked against SciPy per run; roadFLA and del20-unit with METIS too, in the same run.
#   OUT=/tmp/out FASTAPSP_COMMIT=$(git rev-parse --short HEAD) bash benchmarks/device/issue7-h100-s9.sh [1|2]
# Part 1 (about 5 minutes): GPU tests, roadFLA, luxembourg_osm, delaunay16r; part 2: the 2^18 and 2^20
# Delaunay graphs (each part fits one device call of 10 minutes); both when no part is named.
# Needs benchmarks/data/{roadFLA,luxembourg_osm}.mtx.gz; makes the Delaunay graphs when absent.
set -u
cd "$(dirname "$0")/../.."
export PYTHONUNBUFFERED=1 TAG=${TAG:-h100-s9-scale} CHECK=${CHECK:-1}
OUT=${OUT:-/tmp/issue7-out}
mkdir -p "$OUT"
save() { tar czf "$OUT/results.tgz" "benchmarks/results/$TAG" "benchmarks/results/$TAG-metis" 2>/dev/null; }
run() { timeout "$1" bash benchmarks/scale_device.sh run "${@:2}" 2>&1 | grep -v -i warn | grep -v "^mean"; save; }
PART=${1:-all}
bash benchmarks/scale_device.sh make > /dev/null 2>&1 & MK=$!
if [ "$PART" != 2 ]; then
timeout 300 python3 -m pytest -q -x -p no:cacheprovider -m gpu tests/test_jet.py tests/test_cost.py \
    tests/test_partition.py tests/test_boundary_graph.py tests/test_gpu_pipeline.py 2>&1 | tail -2
run 60 roadFLA auto boundary-graph
PARTITIONER=metis TAG=$TAG-metis WARMUP='' run 60 roadFLA auto boundary-graph
run 60 luxembourg_osm "16 32 64" boundary-graph
wait $MK
run 60 delaunay16r "8 16 32" boundary-graph
python3 benchmarks/startup_probe.py benchmarks/data/luxembourg_osm.mtx.gz -k 64 --backend cupy 2>&1 | grep probe
fi
wait $MK
if [ "$PART" != 1 ]; then
run 90 del20-unit auto boundary-graph
PARTITIONER=metis TAG=$TAG-metis WARMUP='' run 90 del20-unit auto boundary-graph
run 40 del18-euclid auto boundary-graph
run 90 del20-euclid auto boundary-graph
run 90 del20-euclid-directed auto boundary-graph
fi
python3 benchmarks/device/summary.py "$TAG"
