"""What a first run costs: a fresh kernel cache, the kernels built, then one graph solved twice.

    python benchmarks/first_contact.py GRAPH [--backend auto] [--out FILE.json]

Every child process gets fresh, empty caches: ``CUPY_CACHE_DIR`` (CuPy's compiled kernels) and
``XDG_CACHE_HOME`` (per-user caches), and the graph is copied into a fresh folder, so no binary
copy of it (``--graph-cache``) exists yet.  Then, timed from process start to exit:

1. ``python -m fastapsp build-kernels`` where the command exists (``build_seconds``; where
   ``build-kernels --help`` fails, or with ``--backend numpy``, the step is skipped,
   ``build_seconds`` is None and ``build_note`` says why);
2. ``fastapsp solve GRAPH --output none`` twice (``first_seconds``, ``second_seconds``), each with
   its ``--report`` (the totals, stages and any ``compile`` entry are kept).

One JSON record: graph, first_seconds, second_seconds, build_seconds, device, commit, and the
details above.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import REPO, write_json_atomic  # noqa: E402
from family import child_metadata, compile_seconds  # noqa: E402


def timed_process(cmd: list[str], env: dict, timeout: float) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, env=env, timeout=timeout)
    return time.perf_counter() - start, proc


def last_line(proc: subprocess.CompletedProcess) -> str:
    text = (proc.stderr.strip() or proc.stdout.strip() or f"exit status {proc.returncode}").splitlines()
    return text[-1] if text else f"exit status {proc.returncode}"


def first_contact(graph: Path, backend: str, timeout: float) -> dict:
    scratch = Path(tempfile.mkdtemp(prefix="first-contact-"))
    try:
        caches = {"CUPY_CACHE_DIR": scratch / "cupy", "XDG_CACHE_HOME": scratch / "xdg"}
        for folder in caches.values():
            folder.mkdir()
        env = {**os.environ, **{key: str(value) for key, value in caches.items()}}
        copy = scratch / "graph" / graph.name
        copy.parent.mkdir()
        shutil.copyfile(graph, copy)

        build_seconds = build_note = None
        fastapsp = [sys.executable, "-m", "fastapsp"]
        helped = subprocess.run([*fastapsp, "build-kernels", "--help"], capture_output=True, text=True, cwd=REPO,
                                env=env, timeout=timeout)
        if backend == "numpy":
            build_note = "skipped: the numpy backend runs no GPU kernels"
        elif helped.returncode != 0:
            build_note = f"skipped: `python -m fastapsp build-kernels --help` failed ({last_line(helped)})"
        else:
            seconds, proc = timed_process([*fastapsp, "build-kernels"], env, timeout)
            if proc.returncode != 0:
                raise RuntimeError(f"python -m fastapsp build-kernels failed: {last_line(proc)}")
            build_seconds = round(seconds, 3)

        runs = []
        for which in ("first", "second"):
            report = scratch / f"{which}.report.json"
            seconds, proc = timed_process([*fastapsp, "solve", str(copy), "--output", "none", "--backend", backend,
                                           "--quiet", "--report", str(report)], env, timeout)
            if proc.returncode != 0:
                raise RuntimeError(f"fastapsp solve ({which} run) failed: {last_line(proc)}")
            data = json.loads(report.read_text())
            runs.append({"process_seconds": round(seconds, 3), "total_seconds": data.get("total_seconds"),
                         "compile_seconds": compile_seconds(data), "compile": data.get("compile"),
                         "stages": data.get("stages"), "k": data.get("k"), "partitioner": data.get("partitioner"),
                         "device": data.get("device"), "n": data.get("n"), "m": data.get("m")})
        return {"build_seconds": build_seconds, "build_note": build_note, "runs": runs,
                "fresh_caches": sorted(caches)}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("graph", help="graph file (copied into a fresh folder first)")
    parser.add_argument("--backend", default="auto", choices=("auto", "numpy", "cupy"))
    parser.add_argument("--timeout", type=float, default=300, help="seconds allowed to each process (default 300)")
    parser.add_argument("--out", default=None,
                        help="JSON file (default benchmarks/results/first_contact/first_contact-<graph>.json)")
    args = parser.parse_args(argv)
    graph = Path(args.graph)
    if not graph.is_file():
        parser.error(f"graph: {graph} is not a file")
    name = graph.name.split(".", 1)[0]
    try:
        found = first_contact(graph, args.backend, args.timeout)
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        print(f"first_contact.py: error: {exc}", file=sys.stderr)
        return 1
    meta = child_metadata()
    first, second = found["runs"]
    record = {"graph": name, "first_seconds": first["process_seconds"], "second_seconds": second["process_seconds"],
              "build_seconds": found["build_seconds"], "device": second["device"], "commit": meta["commit"],
              "build_note": found["build_note"], "fresh_caches": found["fresh_caches"], "runs": found["runs"],
              "backend": args.backend, "versions": meta["versions"], "metadata": meta}
    out = Path(args.out) if args.out else REPO / "benchmarks" / "results" / "first_contact" / f"first_contact-{name}.json"
    write_json_atomic(out, record)
    build = "skipped" if record["build_seconds"] is None else f"{record['build_seconds']:.2f} s"
    print(f"{name}: build-kernels {build}, first solve {record['first_seconds']:.2f} s, second "
          f"{record['second_seconds']:.2f} s ({record['device']}); {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
