"""Where the seconds of reading one graph go, on every rank: bytes, numbers, checks, gathering, CSR.

    python3 benchmarks/read_probe.py GRAPH.mtx            # one process
    mpirun -n 2 python3 benchmarks/read_probe.py GRAPH.mtx

Prints, per rank, the profile's top functions by own time (three reads: the
first warms the page cache); nothing is written.
"""

import cProfile
import io
import pstats
import sys
import time

from fastapsp.comm import get_comm
from fastapsp.io import read_graph

comm = get_comm()
path = sys.argv[1]
for attempt in range(3):
    comm.Barrier()
    profile = cProfile.Profile() if attempt == 2 else None
    start = time.perf_counter()
    if profile:
        profile.enable()
    graph = read_graph(path, comm=comm)
    if profile:
        profile.disable()
    seconds = time.perf_counter() - start
    print(f"rank {comm.rank}/{comm.size} read {attempt}: {seconds:.3f} s  n={graph.n} m={graph.m}", flush=True)
text = io.StringIO()
pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(12)
comm.Barrier()
for r in range(comm.size):
    if r == comm.rank:
        print(f"--- rank {r}\n" + "\n".join(text.getvalue().splitlines()[6:24]), flush=True)
    comm.Barrier()
