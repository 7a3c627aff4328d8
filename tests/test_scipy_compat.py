"""SciPy's own tests of ``scipy.sparse.csgraph.shortest_path``, run against ``fastapsp.shortest_path``.

fastapsp computes non-negative weights only: the tests that need negative weights without a negative
cycle are out of scope and deselected by name; a negative weight raises
:class:`fastapsp.api.NegativeWeightError`, which is a SciPy ``NegativeCycleError`` too, so the negative-cycle
test passes.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_util import cli_env

OUT_OF_SCOPE = {
    "test_negative_weights": 3,  # negative weights without a negative cycle (FW, J, BF)
    "test_sparse_matrices": 1,  # its graph has an arc of weight -1
}


def _scipy_tests():
    import scipy

    path = Path(scipy.__file__).parent / "sparse" / "csgraph" / "tests" / "test_shortest_path.py"
    return path if path.is_file() else None


def test_scipys_shortest_path_tests_pass_on_fastapsp(tmp_path):
    path = _scipy_tests()
    if path is None:
        pytest.skip("this SciPy installation ships no tests")
    env = cli_env()
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).parent), env["PYTHONPATH"]])
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "scipy_shortest_path_plugin", "-p", "no:cacheprovider",
           str(path), "-k", "not (" + " or ".join(OUT_OF_SCOPE) + ")"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout and f"{sum(OUT_OF_SCOPE.values())} deselected" in proc.stdout


def test_negative_weights_are_a_scipy_negative_cycle_error_and_a_value_error():
    import numpy as np
    from scipy.sparse.csgraph import NegativeCycleError

    import fastapsp
    from fastapsp.api import NegativeWeightError

    graph = np.array([[0, 1.0], [-2.0, 0]])
    for catch in (NegativeCycleError, ValueError, NegativeWeightError):
        with pytest.raises(catch, match="negative"):
            fastapsp.shortest_path(graph, backend="numpy")


def test_indices_of_any_shape_give_rows_of_that_shape():
    import numpy as np
    from scipy.sparse.csgraph import shortest_path as scipy_shortest_path

    import fastapsp

    rng = np.random.default_rng(2)
    graph = rng.integers(0, 3, (7, 7)).astype(float)
    want = scipy_shortest_path(graph)
    for shape in [(), (4,), (4, 1), (2, 2), (1, 2, 2)]:
        indices = np.arange(int(np.prod(shape))).reshape(shape) if shape else 3
        got = fastapsp.shortest_path(graph, indices=indices, backend="numpy")
        assert got.shape == np.shape(indices) + (7,)
        np.testing.assert_array_equal(got, want[indices])
    with pytest.raises(ValueError, match="FW"):
        fastapsp.shortest_path(graph, method="FW", indices=[0], backend="numpy")
