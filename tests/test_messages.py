"""The one line a rank says before the job ends goes out in one write, so two ranks' lines on one pipe
never run together."""

import os
import sys

from fastapsp import watch


def test_a_rank_says_its_line_in_one_write(monkeypatch):
    writes = []
    real = os.write

    def spy(fd, data):
        if fd == sys.stderr.fileno():
            writes.append(bytes(data))
            return len(data)
        return real(fd, data)

    monkeypatch.setattr(os, "write", spy)
    watch.tell("fastapsp: error: rank 1 of 3 failed during computing the components: boom")
    assert writes == [b"fastapsp: error: rank 1 of 3 failed during computing the components: boom\n"]
