"""fastapsp.counting.bincount: NumPy's counts on both array modules, values out of range not counted."""

from __future__ import annotations

import numpy as np
import pytest

from fastapsp.counting import bincount
from conftest import host


@pytest.mark.parametrize("length", [0, 1, 7, 1000])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_bincount_counts_values_in_range(xp, length, dtype):
    rng = np.random.default_rng(length)
    values = rng.integers(-3, length + 3, 5000).astype(dtype)
    inside = values[(values >= 0) & (values < length)]
    expected = np.bincount(inside, minlength=length)[:length] if length else np.zeros(0, np.int64)
    got = bincount(xp.asarray(values), length)
    assert type(got).__module__.split(".")[0] == xp.__name__
    assert got.dtype == np.int64 and got.shape == (length,)
    np.testing.assert_array_equal(host(got), expected)


def test_bincount_of_nothing(xp):
    np.testing.assert_array_equal(host(bincount(xp.zeros(0, dtype=np.int64), 3)), [0, 0, 0])


def test_bincount_of_a_matrix_counts_every_entry(xp):
    values = np.arange(12).reshape(3, 4) % 5
    np.testing.assert_array_equal(host(bincount(xp.asarray(values), 5)), np.bincount(values.ravel()))
