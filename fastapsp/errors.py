"""Exception classes raised by fastapsp.

Every error carries a message that names the file or argument, what was found
and what is allowed, so that the command line can print it as one line.
"""


def shorten(text: str, limit: int = 80) -> str:
    """``text`` cut to ``limit`` characters (the cut marked ``...``), for a one-line message."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


class FastAPSPError(Exception):
    """Base class of the errors fastapsp raises on purpose."""


class GraphFormatError(FastAPSPError, ValueError):
    """A graph file could not be read: wrong format, bad value or bad size."""


class PartitionError(FastAPSPError, ValueError):
    """A partition could not be made, loaded or does not fit the graph."""


class ConfigError(FastAPSPError, ValueError):
    """A command-line option or run-file setting is not allowed."""


class BackendError(FastAPSPError, RuntimeError):
    """The requested backend (CuPy, a GPU, an MPI library) is not available."""


class StageError(FastAPSPError, RuntimeError):
    """A stage of one component failed; ``component`` and ``stage`` say which (the cause is chained)."""

    def __init__(self, message: str, *, component, stage: str) -> None:
        super().__init__(message)
        self.component = component
        self.stage = stage


class OutputWarning(UserWarning):
    """Something about the output file deserves attention (a stale temporary file, for instance)."""


class RankError(FastAPSPError):
    """Raised on every rank when any rank failed; the message is the first failure."""


class PrecisionWarning(UserWarning):
    """The distance dtype in use may round or overflow some distances of this graph."""


class PrebuiltKernelWarning(UserWarning):
    """A prebuilt kernel binary was refused or failed to load; its module is compiled by NVRTC instead."""
