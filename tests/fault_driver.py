"""The fastapsp command line with faults injected into chosen ranks and stages (used by test_faults.py).

Usage: ``python fault_driver.py RANK:MODE:STAGE [...] -- fastapsp arguments``.  On rank RANK
(``PMI_RANK``/``OMPI_COMM_WORLD_RANK``, 0 without a launcher) the first call of STAGE does MODE
instead of its work.  STAGE is a name of ``fastapsp.timing.STAGES``: those of the frontier
method (``METHOD_STAGES["frontier"]``: sssp, build, floyd_warshall, extract, min_plus, assemble,
write) or of the boundary-graph method (local_fw, boundary_graph, boundary_rows, extract,
min_plus, assemble, write); pass ``--sssp-method`` to choose the method.  MODE is ``raise`` (a
RuntimeError), ``oom`` (a MemoryError, as CuPy's OutOfMemoryError is), ``kill`` (SIGKILL to
itself: a rank that dies), ``segv`` (SIGSEGV to itself: a crash in native code) or ``hang``
(sleeps: a rank that is stuck).  A file ``READY_FILE.RANK`` (environment variable) is created
when a fault is reached.
"""

import os
import signal
import sys
import time

import fastapsp.components as components
import fastapsp.timing as timing
import fastapsp.sink as sink
from fastapsp.cli import main
from fastapsp.stages.boundary_graph import BoundaryGraph

# Stage -> (where the function the stage calls is looked up, its name there).
TARGETS = {
    "sssp": (components, "boundary_sssp"),
    "build": (components, "build_component_matrix"),
    "floyd_warshall": (components, "close_matrix"),
    "local_fw": (components, "close_components"),
    "boundary_graph": (components, "BoundaryGraph"),
    "boundary_rows": (BoundaryGraph, "boundary_rows"),  # a generator: the fault comes at its first row
    "extract": (components, "extract_inner_to_boundary"),
    "min_plus": (components, "min_plus"),
    "assemble": (components, "assemble_row_block"),
    "write": (sink.NpySink, "write"),  # the host path writes each block inside the stage 'write'
}
METHOD_STAGES = {
    "frontier": ("sssp", "build", "floyd_warshall", "extract", "min_plus", "assemble", "write"),
    "boundary-graph": ("local_fw", "boundary_graph", "boundary_rows", "extract", "min_plus", "assemble", "write"),
}
# Stages that serve every component at once: their errors name no component.
SHARED_STAGES = ("boundary_graph", "boundary_rows")
MODES = ("raise", "oom", "kill", "segv", "hang")
assert set(TARGETS) <= set(timing.STAGES), set(TARGETS) - set(timing.STAGES)


def my_rank() -> int:
    for name in ("PMI_RANK", "OMPI_COMM_WORLD_RANK"):
        if name in os.environ:
            return int(os.environ[name])
    return 0


def fault(mode: str) -> None:
    if os.environ.get("READY_FILE"):
        open(f"{os.environ['READY_FILE']}.{my_rank()}", "w").close()
    if mode == "raise":
        raise RuntimeError("injected failure")
    if mode == "oom":
        raise MemoryError("Out of memory allocating 4,294,967,296 bytes (injected)")
    if mode == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "segv":
        os.kill(os.getpid(), signal.SIGSEGV)
    if mode == "hang":
        time.sleep(3600)


def faulty(stage: str, mode: str):
    """The stage's function, doing ``mode`` at its first call."""
    owner, name = TARGETS[stage]
    original = getattr(owner, name)
    done = []

    def once():
        if not done:
            done.append(True)
            fault(mode)

    if stage == "boundary_rows":
        def rows(*args, **kwargs):
            once()
            yield from original(*args, **kwargs)

        return rows

    def call(*args, **kwargs):
        once()
        return original(*args, **kwargs)

    return call


def inject(spec: str, set_attribute=setattr) -> None:
    """Apply one ``RANK:MODE:STAGE`` when RANK is this process's rank."""
    rank, mode, stage = spec.split(":")
    if mode not in MODES or stage not in TARGETS:
        raise SystemExit(f"fault_driver: bad fault {spec!r}; modes {MODES}, stages {tuple(TARGETS)}")
    if int(rank) == my_rank():
        owner, name = TARGETS[stage]
        set_attribute(owner, name, faulty(stage, mode))


if __name__ == "__main__":
    split = sys.argv.index("--")
    for spec in sys.argv[1:split]:
        inject(spec)
    sys.exit(main(sys.argv[split + 1:]))
