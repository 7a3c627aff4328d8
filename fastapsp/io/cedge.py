"""``.cedge`` files: ``edgeID u v w`` per line, 0-based, one undirected edge per line."""

from __future__ import annotations

from ..graph import Graph
from ._common import _Source
from .snap import _read_edge_list


def _read_cedge(source: _Source) -> Graph:
    return _read_edge_list(source, (4,), "4 ('edgeID u v w')", (1, 2), ("u", "v"), directed=False)
