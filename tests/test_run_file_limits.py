"""Run files and sources files that are hostile: nested YAML aliases, oversized or binary files, and
values whose text is huge give one short line naming the file, at once."""

import time

import pytest
from cli_util import DATA, run_cli

from fastapsp.config import MAX_RUN_FILE_BYTES, load_run_file
from fastapsp.errors import ConfigError
from fastapsp.sources import parse_sources


def _bomb(levels: int = 9) -> str:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]")
    return "graph:\n  " + "\n  ".join(lines) + "\n"


def test_an_alias_bomb_under_a_known_key_is_refused_at_once(tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text(_bomb())
    start = time.perf_counter()
    with pytest.raises(ConfigError, match="aliases") as caught:
        load_run_file(path)
    assert time.perf_counter() - start < 5 and len(str(caught.value)) < 200


def test_a_plain_alias_is_refused_too(tmp_path):
    path = tmp_path / "alias.yaml"
    path.write_text("graph: &g a.mtx\nreport: *g\n")
    with pytest.raises(ConfigError, match="line 1"):
        load_run_file(path)


def test_oversized_and_binary_run_files_are_refused(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_text("# " + "x" * MAX_RUN_FILE_BYTES + "\nk: 3\n")
    with pytest.raises(ConfigError, match="more than"):
        load_run_file(big)
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(b"\xff\xfe\x00graph: a")
    with pytest.raises(ConfigError, match="bin.yaml: not a text file"):
        load_run_file(binary)


def test_a_huge_wrong_value_is_shown_short(tmp_path):
    path = tmp_path / "long.yaml"
    path.write_text("graph: [" + ", ".join(["1"] * 20000) + "]\n")
    with pytest.raises(ConfigError, match="graph must be str") as caught:
        load_run_file(path)
    assert len(str(caught.value)) < 300


def test_a_binary_sources_file_names_the_file(tmp_path):
    path = tmp_path / "ids.txt"
    path.write_bytes(b"1 2 \xff\xfe 3\n")
    with pytest.raises(ConfigError, match="ids.txt: not a text file"):
        parse_sources(str(path), 10)


def test_the_cli_prints_one_line_for_a_bomb(tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text(_bomb())
    proc = run_cli("solve", DATA / "minnesota.mtx.gz", "--config", path, timeout=60)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and len(proc.stderr) < 300
