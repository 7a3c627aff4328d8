# Sourced by the device scripts from the repository root: PYTHON, PYTHONPATH and the wheels.
# DRY=1: the CPU dry mode, with this machine's Python (PYTHON, default python3) and its installed
# packages; nothing is installed.  Otherwise the project's wheels (pymetis, kahip) go to /tmp/site and
# the package and the wheels are byte-compiled (the lent machines write no bytecode, so every process
# would compile ~150 modules again, 0.3-0.4 s).
PYTHON=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
if [ "${DRY:-0}" = 1 ]; then
    export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
else
    "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
    export PYTHONPATH=$PWD:/tmp/site
    "$PYTHON" -m compileall -q -j 0 fastapsp /tmp/site > /dev/null 2>&1
    # CuPy's, NumPy's and SciPy's modules too (pip byte-compiles what it installs; the lent machines' image
    # has no bytecode for many of them): a first GPU run imports about two hundred of them lazily, 0.3-0.4 s
    # of compiling in every process that a user's installation does not pay.
    "$PYTHON" - <<'PY' > /dev/null 2>&1
import compileall, importlib.util, os
for name in ("cupy", "cupyx", "cupy_backends", "numpy", "scipy"):
    spec = importlib.util.find_spec(name)
    if spec and spec.origin:
        compileall.compile_dir(os.path.dirname(spec.origin), quiet=1, workers=0)
PY
fi
# copy_data NAME...: NAME.mtx.gz into benchmarks/data/ from shared/data where it is missing.
copy_data() {
    mkdir -p benchmarks/data
    local name dir
    for name in "$@"; do
        for dir in ../shared/data shared/data; do
            [ -s "benchmarks/data/$name.mtx.gz" ] || { [ -s "$dir/$name.mtx.gz" ] && cp "$dir/$name.mtx.gz" benchmarks/data/; }
        done
        [ -s "benchmarks/data/$name.mtx.gz" ] || echo "note: benchmarks/data/$name.mtx.gz missing (skipped)"
    done
}
