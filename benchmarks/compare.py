"""The benchmark runner: one named experiment (a YAML file of benchmarks/experiments/) per call.

    python benchmarks/compare.py EXPERIMENT.yaml [--out FOLDER] [--force]
                                 [--partition-only [--jobs N [--deadline S]] | --require-partitions
                                  | --report-only]

An experiment's ``kind`` says what it measures:

- ``kind: partitioners`` (the default): graph partitioners compared by what they do to FastAPSP
  (thesis Tables 5.2-5.5), in this process, as described below;
- ``kind: family``: a family of graphs solved by the ``fastapsp solve`` command line, one record
  per run with its stages and rates (``benchmarks/family.py`` describes its keys and records;
  the options below other than ``--out`` and ``--debug`` are for the partitioner comparison).

For every (graph, k, partitioner) of the experiment: partition once (the
partition is saved, compressed, under ``FOLDER/partitions/`` and reused on a rerun), record
its quality (edge cut, boundary vertices in all and in the largest part,
boundary-to-interior ratio, imbalance, partitioning seconds), then solve
``repetitions`` times in this process with :func:`fastapsp.components.run_components`
(with the graph's ``sssp_method``) and record the per-stage seconds and the solve seconds (medians), the solve
plus partitioning seconds, and whether sampled rows equal SciPy's Dijkstra.

FOLDER (default ``benchmarks/results/<experiment name>``) receives
``results.json`` (one object per configuration, each with its run metadata),
``results.csv`` (the same, flat), ``report.md`` (tables and a summary of the
improvement over METIS), PNG plots (with matplotlib) and a copy of the
experiment file.

Experiment file (YAML; any other key is an error)::

    graphs:                 # required; files that do not exist are skipped with a warning
      - ../shared/data/wing.graph.gz           # a path (relative: to the working
      - path: tests/data/minnesota.mtx.gz      #   directory, else to the repository root)
        name: minnesota     # optional, default: file name without extensions
        k: [4, 8]           # optional, overrides the experiment's k for this graph
        format: mtx         # optional, as fastapsp solve --format
        undirected: false   # optional, as fastapsp solve --undirected
        sssp_method: boundary-graph  # optional, overrides the experiment's sssp_method for this graph
    k: [8, 16, 32]          # k values of graphs without their own list
    partitioners: all       # 'all' (every registered one) or a list of names
    backend: auto           # auto | numpy | cupy
    repetitions: 3          # solves per configuration; times are medians
    output: none            # none (rows discarded, as --output none) | memory (rows kept, n x n)
    dtype: float32          # float32 | float64, as fastapsp solve --dtype
    check_samples: 4        # rows checked against scipy.sparse.csgraph.dijkstra (0: no check)
    seed: 42                # partitioner seed, and the seed of the sampled rows
    imbalance: 0.03         # allowed imbalance of the partitioners
    sssp_method: frontier   # where the boundary rows come from (run_components' method):
                            # frontier (boundary SSSP over the whole graph) | boundary-graph
                            # (each component closed, then the boundary graph; faster on large graphs)

Resuming: a configuration whose result is in ``results.json`` with the same
settings (backend, dtype, output, repetitions, check_samples, seed,
imbalance, and its graph's sssp_method; a result stored without sssp_method
was solved with the frontier method) is skipped; ``results.json`` is rewritten
atomically after every configuration, so an interrupted run loses at most the
one in progress.
``--force`` recomputes everything, partitions included.  Failed
configurations are recorded (status ``error``) and retried on the next run;
the exit status is 1 when any configuration failed.

Partitioning on one machine, solving on another (``--partition-only``): for
every configuration, compute (or reuse) and save the partition and record its
quality and partitioning seconds, without solving and without touching the
backend (status ``partitioned``; a rerun skips those whose partition file is
still there).  A later normal run over the same FOLDER -- on the GPU machine,
say -- reuses every saved partition and records the partitioning seconds
stored in its file, so those were measured on the machine that partitioned
(``partition_metadata`` of each result; report.md says so when it differs from
the machine that solved).  ``--jobs N`` runs the partitioners that use one CPU core and nothing else
(METIS, KaHIP, KaMinPar with one thread) N at a time in worker processes
before the others (jet on the GPU, the NAME+b refinements with their own
process pool), each result saying how many ran at once (``partition_jobs``);
``--deadline S`` fails those not finished S seconds after they started.
``--require-partitions`` makes sure of it: a
configuration whose saved partition is missing or unusable fails instead of
being partitioned.  ``--report-only`` runs nothing and redraws results.csv,
report.md and the plots from results.json (say after a run was cut short).

Warm-up, untimed: a tiny graph through every stage once per process and
sssp_method (CUDA kernels compiled, first-call costs paid), each partitioner
once on a tiny graph, and the largest component of each graph's first
configuration.

Each result says which method solved it (``sssp_method``), and so does each
graph's section of report.md.  A saved partition serves either method.

Exactness: with ``output: memory`` the sampled rows come from the last timed
solve.  With ``output: none`` nothing is kept, so one more, untimed run
computes only the components holding the sampled rows (with the boundary-graph
method: after closing every component and building the boundary graph, as the
rows need) and keeps those rows.
Integer weights must match exactly; other weights within a relative 1e-6
(use ``dtype: float64`` for them).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # _common and the compare_* modules
sys.path.insert(0, str(HERE.parent))  # measure this checkout's fastapsp, installed or not

from _common import RESULTS  # noqa: E402
from compare_experiment import (CSV_FIELDS, PARTITIONED, REFERENCE, Config, Experiment,  # noqa: E402,F401
                                ExperimentError, GraphEntry, configurations, load_experiment)
from compare_plot import write_plots  # noqa: E402,F401
from family import Family, run_family  # noqa: E402
from compare_report import improvement_over_reference, write_csv, write_report  # noqa: E402,F401
from compare_run import (GraphData, load_results, partition_configuration, run,  # noqa: E402,F401
                         run_configuration)

# The experiment, measuring, reporting and plotting live in compare_experiment.py,
# compare_run.py, compare_report.py and compare_plot.py; this file is the command.


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("experiment", help="experiment YAML file (see benchmarks/experiments/)")
    parser.add_argument("--out", help="result folder (default: benchmarks/results/<experiment name>)")
    parser.add_argument("--force", action="store_true", help="recompute every configuration and partition")
    parser.add_argument("--debug", action="store_true", help="print tracebacks of failed configurations")
    only = parser.add_mutually_exclusive_group()
    only.add_argument("--partition-only", action="store_true",
                      help="compute, save and measure every partition, solve nothing (no GPU needed); a later "
                           "normal run over the same --out reuses the partitions and their measured seconds")
    only.add_argument("--require-partitions", action="store_true",
                      help="never partition: a configuration without a usable saved partition fails "
                           "(for the solve run after --partition-only)")
    only.add_argument("--report-only", action="store_true",
                      help="run nothing: write results.csv, report.md and the plots from results.json "
                           "(for the configurations of this experiment)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="with --partition-only: run this many single-core partitioners at once (not jet "
                             "or NAME+b, which run one at a time after them)")
    parser.add_argument("--deadline", type=float, default=None,
                        help="with --jobs: seconds after which the parallel partitions not finished fail")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs: must be at least 1, found {args.jobs}")
    if args.jobs > 1 and not args.partition_only:
        parser.error("--jobs: only with --partition-only")
    try:
        exp = load_experiment(args.experiment)
    except ExperimentError as exc:
        print(f"compare.py: error: {exc}", file=sys.stderr)
        return 2
    folder = Path(args.out) if args.out else RESULTS / exp.name
    if isinstance(exp, Family):
        used = [flag for flag, on in (("--force", args.force), ("--partition-only", args.partition_only),
                                      ("--require-partitions", args.require_partitions),
                                      ("--report-only", args.report_only), ("--jobs", args.jobs != 1),
                                      ("--deadline", args.deadline is not None)) if on]
        if used:
            parser.error(f"{', '.join(used)}: not for an experiment of kind family ({args.experiment})")
        try:
            return run_family(exp, folder, debug=args.debug)
        except ExperimentError as exc:
            print(f"compare.py: error: {exc}", file=sys.stderr)
            return 2
    try:
        return run(exp, folder, force=args.force, debug=args.debug, partition_only=args.partition_only,
                   require_partitions=args.require_partitions, report_only=args.report_only, jobs=args.jobs,
                   deadline=args.deadline)
    except ExperimentError as exc:
        print(f"compare.py: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
