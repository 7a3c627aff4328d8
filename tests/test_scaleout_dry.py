"""The scale-out device script (benchmarks/device/scaleout.sh) in its CPU dry mode: one rank, NumPy, minnesota."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def test_scaleout_dry_run(tmp_path):
    pytest.importorskip("pymetis")
    tag = f"scaleout-dry-{uuid.uuid4().hex[:8]}"
    folder = REPO / "benchmarks" / "results" / tag
    env = {**os.environ, "DRY": "1", "PYTHON": sys.executable, "OUT": str(tmp_path), "TAG": tag,
           "RANKS_LIST": "1", "VERIFY": "3", "CHECK": "1"}
    try:
        proc = subprocess.run(["bash", str(REPO / "benchmarks" / "device" / "scaleout.sh")], capture_output=True,
                              text=True, cwd=REPO, env=env, timeout=600)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        runs = [json.loads(p.read_text()) for p in folder.glob("minnesota-*-r1.json")]
        assert len(runs) == 1, sorted(p.name for p in folder.iterdir())
        run = runs[0]
        assert run["graph"] == "minnesota" and run["ranks"] == 1 and run["total_seconds"] > 0
        assert run["verified_in_run"]["verified_rows"] == 3 and run["verified_in_run"]["verify_seconds"] >= 0
        assert run["exactness_check"]["exact"] is True
        model = json.loads((folder / "model.json").read_text())
        assert isinstance(model, dict) and model
        assert (tmp_path / f"results-{tag}.tgz").is_file()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
