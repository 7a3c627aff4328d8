"""Where the seconds outside ``solve_job`` go: process start, imports, the run, exit.

Runs ``fastapsp solve`` in a child process that notes its own times (since
process creation, from /proc/self/stat) and the parent's wall clock around it:

    python3 benchmarks/startup_probe.py GRAPH.mtx.gz -k 64 --backend cupy

Prints one line per phase; nothing is written.  Linux only.  The child ends as
``fastapsp`` does (``fastapsp.cli.run``); ``--normal-exit`` (before the
solve arguments) gives the interpreter's own teardown, for comparison.
"""

import os
import subprocess
import sys
import time

CHILD = r"""
import os, sys, time
exit_mode = sys.argv.pop(1)
def since_start():
    ticks = os.sysconf("SC_CLK_TCK")
    start = int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[19]) / ticks
    boot = float(open("/proc/uptime").read().split()[0])
    return boot - start
t0 = time.perf_counter(); s0 = since_start()
import fastapsp.cli
t1 = time.perf_counter()
import numpy, scipy.sparse
t2 = time.perf_counter()
import cupy
t3 = time.perf_counter()
rc = fastapsp.cli.main(sys.argv[1:])
t4 = time.perf_counter()
print(f"probe: interpreter start {s0:.3f} s; import fastapsp.cli {t1 - t0:.3f}; numpy+scipy {t2 - t1:.3f}; "
      f"cupy {t3 - t2:.3f}; main {t4 - t3:.3f}", file=sys.stderr, flush=True)
if exit_mode == "normal":
    sys.exit(rc)  # the interpreter's teardown
fastapsp.cli._end_process(rc)  # as the console script ends
"""


def main() -> int:
    args = sys.argv[1:]
    mode = "normal" if args[:1] == ["--normal-exit"] else "fast"
    args = args[1:] if mode == "normal" else args
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CHILD, mode, "solve", *args, "--output", "none"],
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    print(f"probe: process start to exit {wall:.3f} s (rc {proc.returncode})")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
