"""benchmarks/ncu_summary.py on a raw Nsight Compute CSV page (written here; no GPU needed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

RAW = '''==PROF== Connected to process 1
"ID","Kernel Name","Grid Size","Block Size","gpu__time_duration.sum","sm__throughput.avg.pct_of_peak_sustained_elapsed","smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio","smsp__average_warp_latency_issue_stalled_barrier.ratio","launch__registers_per_thread"
"","","","","msecond","%","ratio","ratio","register/thread"
"0","min_plus_smallk_u16","(20, 300, 1)","(256, 1, 1)","1.5","55.2","3.1","7.5","64"
a line the program printed
"1","min_plus_u16","(2, 30, 1)","(256, 1, 1)","0.0125","20","1","0.5","96"
'''


def test_launches_units_and_stalls(tmp_path):
    raw = tmp_path / "ncu.csv"
    raw.write_text(RAW)
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"n": 1000, "k": 10, "boundary_vertices": 250, "stages": {"min_plus": 0.5}}))
    out = tmp_path / "out.json"
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "ncu_summary.py"), str(raw), "--graph", "g",
                           "--report", str(report), "--json", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    assert data["graph"] == "g" and data["mean_boundary_per_component"] == 25.0
    first, second = data["launches"]
    assert first["kernel"] == "min_plus_smallk_u16" and first["duration_us"] == 1500.0  # milliseconds to us
    assert first["top_stalls"] == [["barrier", 7.5], ["long_scoreboard", 3.1]]
    assert second["registers_per_thread"] == 96.0 and second["duration_us"] == 12.5


def test_no_header_is_one_line(tmp_path):
    raw = tmp_path / "ncu.csv"
    raw.write_text("==PROF== nothing profiled\n")
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "ncu_summary.py"), str(raw)],
                          capture_output=True, text=True)
    assert proc.returncode != 0 and "no ncu raw CSV header" in proc.stderr
