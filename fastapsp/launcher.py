"""Whether an MPI launcher started this process, from its environment alone.

Below :mod:`fastapsp.comm` and :mod:`fastapsp.watch` (both ask), and free of
MPI itself: a plain process never loads an MPI library.
"""

from __future__ import annotations

import os

__all__ = ["LAUNCHER_VARS", "mpi_forced", "launched_under_mpi"]

# Variables that MPI launchers (Open MPI, MPICH/Hydra, Intel MPI, PMIx, SLURM's srun) set in each task.
LAUNCHER_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS", "PMI_RANK")


def mpi_forced() -> bool | None:
    """``FASTAPSP_MPI``: True for 1/yes/on, False for 0/no/off, None when unset (the launcher decides)."""
    value = os.environ.get("FASTAPSP_MPI", "").lower()
    if value in ("0", "no", "off"):
        return False
    if value in ("1", "yes", "on"):
        return True
    return None


def launched_under_mpi() -> bool:
    """True when an MPI launcher (mpiexec, mpirun, srun with PMI) started this process."""
    forced = mpi_forced()
    if forced is not None:
        return forced
    return any(v in os.environ for v in LAUNCHER_VARS)
