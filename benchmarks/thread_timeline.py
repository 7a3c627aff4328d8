"""What every thread of one ``fastapsp`` command is doing, sampled through the run: a timeline.

cProfile (``profile_run.py``, ``profile_ranks.py``) sees one thread and counts a wait for the
interpreter lock or for a module another thread is importing as time in the function that waits.
This runs the command line in this process and, from a sampling thread, notes every ``--interval``
seconds each other thread's innermost frame, the innermost frame in fastapsp's own code and the
module it is importing, if any; then prints one line per change::

      0.358 MAIN:backend.py:gpu_count [acquire] | T1:__init__.py:<module> [get_data] import=cupy

(seconds since this script started; ``MAIN`` the thread that runs the command, ``T1``, ``T2`` the
others in the order they first appear.)  After END, per thread, the seconds it was seen importing each
module, waiting for a module another thread imports, or in each fastapsp function.  Run it in place of ``python -m fastapsp``::

    python benchmarks/thread_timeline.py --out /tmp/roadFLA.txt -- \\
        solve benchmarks/data/roadFLA.mtx.gz --output none

The command's own exit status is this script's.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

START = time.perf_counter()
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
from _common import command_line, run_command_line, write_text  # noqa: E402
PACKAGE = str(REPO / "fastapsp")


def _where(frame) -> tuple[str, str, str]:
    """(innermost frame, innermost frame in fastapsp, module being imported) of one thread's stack."""
    leaf = own = importing = ""
    while frame is not None:
        code = frame.f_code
        name = f"{os.path.basename(code.co_filename)}:{code.co_name}"
        leaf = leaf or name
        if not own and code.co_filename.startswith(PACKAGE):
            own = name
        if code.co_name == "_find_and_load":  # outward from the leaf: the outermost import is kept
            importing = str(frame.f_locals.get("name", importing))
        frame = frame.f_back
    return leaf, own, importing


class Sampler:
    """Samples every thread but itself each ``interval`` seconds until stopped or ``limit`` samples."""

    def __init__(self, interval: float, limit: int):
        self.interval, self.limit = interval, limit
        self.samples: list = []
        self.main = threading.get_ident()
        self.names: dict = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="thread-timeline", daemon=True)

    def _name(self, ident: int) -> str:
        if ident == self.main:
            return "MAIN"
        return self.names.setdefault(ident, f"T{len(self.names) + 1}")

    def _run(self) -> None:
        me = threading.get_ident()
        while not self._stop.wait(self.interval) and len(self.samples) < self.limit:
            now = time.perf_counter() - START
            row = sorted((self._name(ident), *_where(frame))
                         for ident, frame in sys._current_frames().items() if ident != me)
            self.samples.append((now, row))

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def summary(self, top: int = 8) -> list[str]:
        """Per thread, the seconds of what it did most: the module it was importing, a wait for a module
        another thread imports (the import lock), or else its innermost frame in fastapsp (its innermost
        frame where it has none).  A sample counts until the next one (sampling takes time of its own, so
        the samples are further apart than the interval)."""
        from collections import Counter

        spent: dict = {}
        times = [now for now, _ in self.samples]
        for (now, row), later in zip(self.samples, times[1:] + [times[-1] + self.interval if times else 0.0]):
            for name, leaf, own, imp in row:
                if leaf.endswith(":acquire") and imp:
                    what = f"waiting for import {imp}"
                elif imp:
                    what = f"import {imp}"
                else:
                    what = own or leaf
                spent.setdefault(name, Counter())[what] += later - now
        out = []
        for name in sorted(spent, key=lambda n: (n != "MAIN", n)):
            total = sum(spent[name].values())
            parts = [f"{what} {seconds:.3f}" for what, seconds in spent[name].most_common(top)]
            out.append(f"# {name} {total:.3f} s: " + " | ".join(parts))
        return out

    def lines(self) -> list[str]:
        """One line per sample whose threads are somewhere else than at the sample before."""
        out, previous = [], None
        for now, row in self.samples:
            text = " | ".join(f"{name}:{own or '-'} [{leaf}]" + (f" import={imp}" if imp else "")
                              for name, leaf, own, imp in row)
            if text != previous:
                out.append(f"{now:8.3f} {text}")
                previous = text
        return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None, help="file of the timeline (default: standard output)")
    parser.add_argument("--interval", type=float, default=0.01, help="seconds between samples (default 0.01)")
    parser.add_argument("--limit", type=int, default=20000, help="samples at the most (default 20000)")
    parser.add_argument("cli", nargs=argparse.REMAINDER, help="-- then the fastapsp command line")
    args = parser.parse_args(argv)
    command = command_line(parser, args)
    if not args.interval > 0:
        parser.error(f"--interval: {args.interval} is not a positive number of seconds")

    sampler = Sampler(args.interval, args.limit)
    sampler.start()
    try:
        status = run_command_line(command)
    finally:
        sampler.stop()
    end = time.perf_counter() - START
    text = "\n".join([f"# fastapsp {' '.join(command)}", *sampler.lines(),
                      f"{end:8.3f} END (status {status}, {len(sampler.samples)} samples)",
                      "# per thread: seconds seen, then what took most of them", *sampler.summary()]) + "\n"
    write_text(args.out, text)
    return status


if __name__ == "__main__":
    sys.exit(main())
