"""Reading a graph file: parsing its text against mapping its binary cache (``fastapsp.io.cache``).

For each ``--graph NAME=PATH`` (copied into a temporary folder, so that no cache is left beside the
original): the seconds of a read that parses the text (``cache="none"``), of the first read with a
cache (parse and write), and of later reads of the cache (best of ``--repeat``), with the size of the
text; and METIS on the parsed graph and on the cached one (k = n / 1800): the arrays a cache gives must
not slow what comes after the read.  ``CACHE_FROM_BYTES`` in ``fastapsp/io/cache.py`` comes from these
records.

    python benchmarks/graph_cache_bench.py --graph roadNY=benchmarks/data/roadNY.mtx.gz \\
        --out benchmarks/results/graph-cache
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, named_graph, write_result  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--graph", action="append", required=True, type=named_graph, metavar="NAME=PATH")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", default=str(RESULTS / "graph-cache"))
    args = parser.parse_args(argv)

    import fastapsp
    import fastapsp.io.cache as cache_module

    cache_module.CACHE_FROM_BYTES = 0  # every file gets its cache here, whatever the rule says
    records = []
    with tempfile.TemporaryDirectory(prefix="fastapsp-cache-bench-") as folder:
        for name, source in args.graph:
            path = Path(folder) / Path(source).name
            shutil.copy(source, path)
            opener = gzip.open if path.suffix == ".gz" else open
            with opener(path, "rb") as f:
                text_bytes = len(f.read())

            def timed(cache):
                start = time.perf_counter()
                graph = fastapsp.read_graph(path, cache=cache)
                return time.perf_counter() - start, graph

            def metis_seconds(graph):
                k = max(2, graph.n // 1800)
                start = time.perf_counter()
                fastapsp.partition_graph(graph, k, "metis")
                return time.perf_counter() - start

            parse, parsed = min((timed("none") for _ in range(args.repeat)), key=lambda x: x[0])
            first, graph = timed("auto")
            mapped, cached = min((timed("auto") for _ in range(args.repeat)), key=lambda x: x[0])
            record = {"graph": name, "n": graph.n, "m": graph.m, "text_bytes": text_bytes,
                      "parse_seconds": parse, "first_cached_read_seconds": first, "cached_read_seconds": mapped,
                      "metis_seconds_parsed": min(metis_seconds(parsed) for _ in range(2)),
                      "metis_seconds_cached": min(metis_seconds(cached) for _ in range(2))}
            records.append(record)
            print(f"{name}: {text_bytes / 2**20:.1f} MiB of text, parse {parse * 1e3:.1f} ms, first read with a "
                  f"cache {first * 1e3:.1f} ms, cached {mapped * 1e3:.1f} ms; METIS after {record['metis_seconds_parsed']:.3f} / "
                  f"{record['metis_seconds_cached']:.3f} s", flush=True)
    path = write_result({"benchmark": "graph_cache_bench", "records": records}, args.out, "graph-cache")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
