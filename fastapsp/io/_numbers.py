"""The numbers of a text, parsed by NumPy; also run as a script by the readers' worker processes.

Only NumPy is imported here, so that a worker (``python _numbers.py``: the text on standard
input, the array in ``.npy`` form on standard output) starts without the rest of fastapsp and
without the caller's main module.
"""

from __future__ import annotations

import sys
import warnings

import numpy as np


def numbers_of(text: bytes, ntokens: int | None = None):
    """The numbers of ``text`` as int64 when all are whole (and within int64), else float64;
    None when NumPy cannot read them all (or not ``ntokens`` of them: the caller then finds
    the culprit).  Whole numbers parse several times faster as int64, so that comes first."""
    for dtype in (np.int64, np.float64):
        try:
            with warnings.catch_warnings():
                # Older NumPy warns and returns what it read so far instead of raising.
                warnings.simplefilter("error", DeprecationWarning)
                values = np.fromstring(text, dtype=dtype, sep=" ")
        except (ValueError, DeprecationWarning):
            continue
        if ntokens is not None and values.size != ntokens:
            continue
        if dtype is np.int64 and values.size:
            # NumPy saturates whole numbers beyond int64 instead of failing: a weight of
            # 1e23 written out in digits would silently become 2**63 - 1.  Read such
            # files as float64, where the checks see the real magnitude and sign.
            limits = np.iinfo(np.int64)
            if values.max() == limits.max or values.min() == limits.min:
                continue
        return values
    return None


def _worker() -> int:
    values = numbers_of(sys.stdin.buffer.read())
    if values is None:
        return 3
    np.save(sys.stdout.buffer, values, allow_pickle=False)
    return 0


if __name__ == "__main__":
    sys.exit(_worker())
