"""Progress on rank 0: components done of this rank's share, rows per second and ETA (tqdm, stderr)."""

from __future__ import annotations

import sys

import numpy as np

__all__ = ["Progress", "make_progress"]


class Progress:
    """An ``on_block`` consumer that advances a tqdm bar by the rows each block completes.

    A block of r rows and w of the n columns counts r * w / n rows.
    """

    def __init__(self, sizes, n: int, *, file=None) -> None:
        from tqdm import tqdm

        self.n = max(1, n)
        self.ends = np.cumsum(np.asarray(sizes, dtype=np.float64))
        total = float(self.ends[-1]) if self.ends.size else 0.0
        self.done = 0.0
        self.bar = tqdm(total=total, unit="rows", unit_scale=True, desc="rank 0", file=file or sys.stderr,
                        dynamic_ncols=True, smoothing=0.1)
        self._set_postfix()

    def _set_postfix(self) -> None:
        finished = int(np.searchsorted(self.ends, self.done + 1e-6, side="right"))
        self.bar.set_postfix_str(f"components {finished}/{self.ends.size}", refresh=False)

    def __call__(self, ids, column_start, block) -> None:
        self.advance(block.shape[0] * block.shape[1])

    def advance(self, entries: int) -> None:
        """Count ``entries`` distances done (a block's, or those reduced as they were made)."""
        rows = entries / self.n
        self.done += rows
        self._set_postfix()
        self.bar.update(rows)

    def close(self) -> None:
        self.bar.close()


def make_progress(sizes, n: int, *, rank: int, quiet: bool, stream=None):
    """A :class:`Progress` on rank 0 when ``stream`` (stderr) is a terminal and not ``quiet``; else None."""
    stream = sys.stderr if stream is None else stream
    if quiet or rank != 0 or not getattr(stream, "isatty", lambda: False)():
        return None
    return Progress(sizes, n, file=stream)
