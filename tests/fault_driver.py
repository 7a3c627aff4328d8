"""The fastapsp command line with faults injected into chosen ranks and stages (used by test_faults.py).

Usage: ``python fault_driver.py RANK:MODE:STAGE [...] -- fastapsp arguments``.  On rank RANK
(``PMI_RANK``/``OMPI_COMM_WORLD_RANK``, 0 without a launcher) the first call of STAGE
(``sssp``, ``build``, ``floyd_warshall``, ``min_plus``) does MODE instead of its work:
``raise`` (a RuntimeError), ``oom`` (a MemoryError, as CuPy's OutOfMemoryError is),
``kill`` (SIGKILL to itself, a rank that dies) or ``hang`` (sleeps, a rank that is stuck).
A file ``READY_FILE`` (environment variable) is created when a fault is reached.
"""

import os
import signal
import sys
import time

import fastapsp.pipeline as pipeline
from fastapsp.cli import main

STAGES = {"sssp": "boundary_sssp", "build": "build_component_matrix", "floyd_warshall": "blocked_floyd_warshall",
          "min_plus": "min_plus"}


def my_rank() -> int:
    for name in ("PMI_RANK", "OMPI_COMM_WORLD_RANK"):
        if name in os.environ:
            return int(os.environ[name])
    return 0


def faulty(original, mode):
    def stage(*args, **kwargs):
        if os.environ.get("READY_FILE"):
            open(f"{os.environ['READY_FILE']}.{my_rank()}", "w").close()
        if mode == "raise":
            raise RuntimeError("injected failure")
        if mode == "oom":
            raise MemoryError("Out of memory allocating 4,294,967,296 bytes (injected)")
        if mode == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        if mode == "hang":
            time.sleep(3600)
        return original(*args, **kwargs)

    return stage


if __name__ == "__main__":
    split = sys.argv.index("--")
    for spec in sys.argv[1:split]:
        rank, mode, stage = spec.split(":")
        if int(rank) == my_rank():
            name = STAGES[stage]
            setattr(pipeline, name, faulty(getattr(pipeline, name), mode))
    args = sys.argv[split + 1:]
    if args[:1] == ["solve"] and "--sssp-method" not in args:
        # The stages named above are those of the frontier pipeline (the boundary-graph method
        # closes components in stages/boundary_graph.py); both run under the same fault handling.
        args += ["--sssp-method", "frontier"]
    sys.exit(main(args))
