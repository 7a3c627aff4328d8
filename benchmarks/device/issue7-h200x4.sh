#!/usr/bin/env bash
# The device run of issue 7 recorded in benchmarks/README.md ("Million-vertex graphs") on 4 x H200,
# from the repo root with benchmarks/data (roadFLA) and .whl (pymetis, kahip wheels) carried.
# At c3622a7 its steps were written out here; they are now those of issue7-multigpu.sh with 4 GPUs
# (roadFLA and del20-unit, one rank and `mpirun -n 4`, one component checked against SciPy per run).
# FASTAPSP_COMMIT names the commit measured; $OUT is the device tool's output folder.
set -u
export PYTHONPATH=$PWD:/tmp/site FASTAPSP_COMMIT=c3622a7
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
GPUS=4 TAG=h200x4-scale bash benchmarks/device/issue7-multigpu.sh
