"""How to start CUDA while the graph is read: when is a fresh process ready for its first GPU work?

Each strategy runs in a fresh child process (median of ``--repeat``), timed from
the child's first line: the graph is read (``fastapsp.io.read_graph``) while
CUDA starts, then the child waits until CuPy is imported and the CUDA context
exists.  Printed: the read's own seconds and the seconds until both are done.

* ``none``: read, then import CuPy and make the context (no overlap);
* ``thread``: a thread imports CuPy and makes the context while the main thread
  reads (``fastapsp.backend.start_gpu_warmup``, the default);
* ``import-first``: CuPy imported first, in the main thread; then a thread makes
  the context while the main thread reads.

    python3 benchmarks/warmup_probe.py GRAPH.mtx.gz [--repeat 3] [--tag h100-s12]

Writes ``benchmarks/results/<tag>/warmup-probe-<graph>.json`` when ``--tag`` is given.
"""

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

from _common import RESULTS, metadata, write_result

CHILD = r"""
import sys, time, threading
t0 = time.perf_counter()
strategy, path = sys.argv[1], sys.argv[2]
from fastapsp.io import read_graph

def context():
    import cupy
    cupy.cuda.runtime.free(0)

thread = None
if strategy == "thread":
    thread = threading.Thread(target=context, daemon=True); thread.start()
elif strategy == "import-first":
    import cupy
    thread = threading.Thread(target=context, daemon=True); thread.start()
t1 = time.perf_counter()
graph = read_graph(path)
t2 = time.perf_counter()
if thread is None:
    context()
else:
    thread.join()
t3 = time.perf_counter()
print("{" + f'"read": {t2 - t1:.4f}, "ready": {t3 - t0:.4f}, "n": {graph.n}' + "}")
"""

STRATEGIES = ("none", "thread", "import-first")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("graph")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tag", default=None)
    args = parser.parse_args()
    found = {}
    for _ in range(args.repeat):  # strategies interleaved, so a slow moment of the host hits each alike
        for strategy in STRATEGIES:
            proc = subprocess.run([sys.executable, "-c", CHILD, strategy, args.graph], capture_output=True, text=True)
            if proc.returncode != 0:
                raise SystemExit(f"warmup_probe: {strategy} failed: {proc.stderr.strip()[-500:]}")
            found.setdefault(strategy, []).append(json.loads(proc.stdout.strip().splitlines()[-1]))
    summary = {}
    for strategy, runs in found.items():
        summary[strategy] = {key: round(statistics.median(r[key] for r in runs), 4) for key in ("read", "ready")}
        summary[strategy]["runs"] = runs
        print(f"{strategy:13s} read {summary[strategy]['read']:.3f} s  ready {summary[strategy]['ready']:.3f} s")
    if args.tag:
        name = Path(args.graph).name.split(".")[0]
        print(write_result({"benchmark": "warmup_probe", "graph": name, "seconds": summary, "metadata": metadata()},
                           folder=RESULTS / args.tag, name=f"warmup-probe-{name}.json"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
