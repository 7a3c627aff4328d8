"""The temporary output files of this process, so that whatever stops it can remove them.

Sinks add the name of a file they are writing and discard it once the file
is published or removed; the signal handlers (:mod:`fastapsp.cli`), the
watchdog and the status files (:mod:`fastapsp.watch`) read the same set.
"""

from __future__ import annotations

import os

__all__ = ["TEMPORARY_FILES", "remove_temporary_files"]

# Temporary output files of this process's unfinished sinks, removed on SIGINT/SIGTERM (see cli.py).
TEMPORARY_FILES: set[str] = set()


def remove_temporary_files() -> list[str]:
    """Delete the temporary output files of every unfinished sink of this process; return their names.

    Safe to call from a signal handler and on every rank (a file already gone is skipped).
    """
    removed = []
    for path in sorted(TEMPORARY_FILES):
        try:
            os.remove(path)
            removed.append(path)
        except OSError:
            pass
    TEMPORARY_FILES.clear()
    return removed
