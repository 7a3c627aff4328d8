"""pytest plugin: SciPy's own shortest-path tests call ``fastapsp.shortest_path`` (NumPy backend) wherever
they call ``scipy.sparse.csgraph.shortest_path`` (``python -m pytest -p scipy_shortest_path_plugin FILE``)."""

import functools


def pytest_configure(config):
    import scipy.sparse.csgraph.tests.test_shortest_path as scipy_tests

    import fastapsp

    scipy_tests.shortest_path = functools.partial(fastapsp.shortest_path, backend="numpy")
