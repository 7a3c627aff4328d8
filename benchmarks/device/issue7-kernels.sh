#!/usr/bin/env bash
# The device run of issue 7 recorded in benchmarks/README.md ("Million-vertex graphs"), as it was run
# from the repo root with benchmarks/data (roadFLA, luxembourg_osm) and .whl (pymetis, kahip wheels) carried.
# FASTAPSP_COMMIT names the commit measured; $OUT is the device tool's output folder.
set -u
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
python3 -c "
from fastapsp.kernels import kernel_source
open('/tmp/u.cu','w').write(kernel_source('min_plus_u16.cu'))"
for o in "" "-DU16_SPLIT"; do nvcc -arch=sm_90 -std=c++17 $o -cubin -o /tmp/u.cubin /tmp/u.cu && cuobjdump -sass /tmp/u.cubin > /tmp/u.sass; echo "opts [$o]:"; grep -o "VIADDMNMX[.A-Z0-9]*\|VIMNMX[.A-Z0-9]*\|VIADD[.A-Z0-9]*\|IADD3\|HMNMX2\|PRMT\|LOP3.LUT" /tmp/u.sass | sort | uniq -c | sort -rn | head -6; done
python3 benchmarks/minplus_u16_bench.py --tag h100-kernels
tar czf $OUT/results.tgz benchmarks/results/h100-kernels
