#!/usr/bin/env bash
# The device run of issue 7 recorded in benchmarks/README.md ("Million-vertex graphs"), as it was run
# from the repo root with benchmarks/data (roadFLA, luxembourg_osm) and .whl (pymetis, kahip wheels) carried.
# FASTAPSP_COMMIT names the commit measured; $OUT is the device tool's output folder.
set -u
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1 FASTAPSP_COMMIT=a2a37bc TAG=h100-final CHECK=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
save() { tar czf $OUT/results.tgz benchmarks/results/h100-final benchmarks/results/h100-kernels 2>/dev/null; }
mk() { n=$1; shift; [ -s benchmarks/data/$n.mtx ] || python3 scripts/make_delaunay.py "$@" -o benchmarks/data/$n.mtx >/dev/null; }
( mk del20-unit --scale 20 --seed 1 & mk del18-euclid --scale 18 --seed 1 --weights euclidean & mk del20-euclid --scale 20 --seed 1 --weights euclidean & mk del20-euclid-directed --scale 20 --seed 1 --weights euclidean --directed & mk delaunay16r --scale 16 --seed 1 & wait ) & MK=$!
timeout 100 python3 -m pytest -q -x -p no:cacheprovider -m gpu tests/test_min_plus_u16.py tests/test_boundary_graph.py tests/test_gpu_pipeline.py 2>&1 | tail -2
python3 benchmarks/minplus_u16_bench.py --tag h100-kernels 2>&1 | grep -v "M=  400"
save
run() { timeout $1 bash benchmarks/scale_device.sh run "${@:2}" 2>&1 | grep -v -i warn | grep -v "^mean\|sampled rows"; save; }
run 40 roadFLA auto boundary-graph
run 50 luxembourg_osm "16 32 64" boundary-graph
wait $MK
run 50 delaunay16r "8 16 32" boundary-graph
run 80 del20-unit auto boundary-graph
run 30 del18-euclid auto boundary-graph
run 80 del20-euclid auto boundary-graph
run 80 del20-euclid-directed auto boundary-graph
python3 - <<'PY'
import json,glob
for f in sorted(glob.glob('benchmarks/results/h100-final*/*-k*.json')):
    d=json.load(open(f)); s=d['stages']
    print(f.split('/')[-2][-7:], d['graph'],d['k'],round(d['total_seconds'],2),{a:round(b,2) for a,b in s.items() if b>0.01}, d['boundary_vertices'], (d.get('exactness_check') or {}).get('exact'))
PY
