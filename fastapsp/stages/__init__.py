"""The steps of FastAPSP, one file each, in the order the driver runs them.

Each stage takes NumPy or CuPy arrays and runs on the host or the GPU accordingly.
"""

from .assemble import assemble_row_block
from .boundary_sssp import boundary_sssp
from .build import build_component_matrix
from .extract import extract_inner_to_boundary
from .floyd_warshall import blocked_floyd_warshall
from .min_plus import min_plus

__all__ = [
    "boundary_sssp",
    "build_component_matrix",
    "blocked_floyd_warshall",
    "extract_inner_to_boundary",
    "min_plus",
    "assemble_row_block",
]
