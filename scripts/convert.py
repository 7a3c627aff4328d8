#!/usr/bin/env python3
"""Convert a graph file between the formats fastapsp reads.

The input is read with :func:`fastapsp.read_graph`, so it may be any format
fastapsp reads (Matrix Market, the FastAPSP research format, METIS, SNAP,
cedge; plain or ``.gz``), told from its name or named with ``--from``.  The
output format is told from the output name or named with ``--to``:

========  ==========================  =========================================
format    extensions                  written as
========  ==========================  =========================================
mtx       .mtx .mm                    ``general`` (directed) or ``symmetric``
                                      lower triangle (undirected); ``pattern``
                                      when all weights are 1, else ``integer``
                                      or ``real``
fastapsp  (``--to fastapsp``)         ``n n m`` then lower-triangle ``i j [w]``
metis     .graph .metis               neighbour lists, ``fmt`` 1 when weighted
snap      .txt .edges .el .snap       0-based arcs ``u v [w]`` (an undirected
                                      graph as both arcs of every edge)
cedge     .cedge                      ``edgeID u v w``, 0-based
========  ==========================  =========================================

Add ``.gz`` to the output name to compress it.  Reading the output back gives
the same graph (the same CSR arrays and weights; see ``scripts/_graphio.py``
for how SNAP and cedge keep trailing isolated vertices).  METIS, fastapsp and
cedge hold undirected graphs: a directed input must be symmetric, or be
symmetrised with ``--undirected`` (which keeps the lighter of ``u -> v`` and
``v -> u``).  Examples::

    python scripts/convert.py tests/data/minnesota.mtx.gz minnesota.graph
    python scripts/convert.py web-Google.txt.gz web-Google.mtx
    python scripts/convert.py road.cedge road.mtx.gz
"""

from __future__ import annotations

import argparse
import sys

from _graphio import WRITE_FORMATS, format_from_name, report, write_graph
from fastapsp import read_graph
from fastapsp.io import FORMATS


def convert(source, target, *, from_format=None, to_format=None, undirected=False) -> str:
    """Read ``source`` and write it to ``target``; return the format written."""
    to_format = format_from_name(target) if to_format is None else to_format
    graph = read_graph(source, format=from_format, undirected=undirected)
    comments = [f"converted by scripts/convert.py from {source}"]
    fmt = write_graph(target, graph, to_format, comments=comments, undirected=undirected)
    report(target, graph, fmt)
    return fmt


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Convert between graph formats (mtx, fastapsp, metis, snap, "
                                                 "cedge), gzip allowed on either side.")
    parser.add_argument("input", help="graph file fastapsp reads")
    parser.add_argument("output", help="output file; format from its extension or --to")
    parser.add_argument("--from", dest="from_format", choices=FORMATS, default=None,
                        help="input format (default: from the extension)")
    parser.add_argument("--to", dest="to_format", choices=WRITE_FORMATS, default=None,
                        help="output format (default: from the extension; .mtx means Matrix Market)")
    parser.add_argument("--undirected", action="store_true",
                        help="treat every arc of a directed input as an undirected edge")
    args = parser.parse_args(argv)
    try:
        convert(args.input, args.output, from_format=args.from_format, to_format=args.to_format,
                undirected=args.undirected)
    except (ValueError, OSError) as exc:
        print(f"convert.py: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
