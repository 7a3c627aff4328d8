#!/usr/bin/env bash
# The device run of issue 7 recorded in benchmarks/README.md ("Million-vertex graphs"), as it was run
# from the repo root with benchmarks/data (roadFLA, luxembourg_osm) and .whl (pymetis, kahip wheels) carried.
# FASTAPSP_COMMIT names the commit measured; $OUT is the device tool's output folder.
set -u
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1 FASTAPSP_COMMIT=c3622a7 TAG=h200x4-scale CHECK=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
nvidia-smi -L
save() { tar czf $OUT/results.tgz benchmarks/results/h200x4-scale 2>/dev/null; }
[ -s benchmarks/data/del20-unit.mtx ] || python3 scripts/make_delaunay.py --scale 20 --seed 1 -o benchmarks/data/del20-unit.mtx >/dev/null & MK=$!
run() { timeout $1 bash benchmarks/scale_device.sh run "${@:2}" 2>&1 | grep -v -i warn | grep -v "^mean"; save; }
M="mpirun -n 4 --bind-to none -x PYTHONPATH -x OMPI_ALLOW_RUN_AS_ROOT -x OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"
run 60 roadFLA auto boundary-graph
LAUNCHER="$M" RANKS=4 run 60 roadFLA auto boundary-graph
wait $MK
run 90 del20-unit auto boundary-graph
LAUNCHER="$M" RANKS=4 run 90 del20-unit auto boundary-graph
python3 - <<'PY'
import json,glob
for f in sorted(glob.glob('benchmarks/results/h200x4-scale/*-k*.json')):
    d=json.load(open(f)); s=d['stages']
    print(d['graph'],d['k'],d['ranks'],round(d['total_seconds'],2),{a:round(b,2) for a,b in s.items() if b>0.01}, (d.get('exactness_check') or {}).get('exact'), d['device'])
PY
