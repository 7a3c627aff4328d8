import time, sys, importlib
import numpy as np
import fastapsp
mp = importlib.import_module("fastapsp.stages.min_plus")
for path in sys.argv[1:]:
    g = fastapsp.read_graph(path)
    plan = fastapsp.plan(g, backend="numpy", output="memory")
    for label, k in (("float32", 10**9), ("16-bit", mp.HOST_U16_MIN_K)):
        mp.HOST_U16_MIN_K = k
        t = time.perf_counter(); d = fastapsp.solve(g, plan=plan); el = time.perf_counter() - t
        print(path.split('/')[-1], 'k', plan.k, label, round(el, 2), 's', float(np.nansum(np.where(np.isinf(d), 0, d))))
