"""The documentation cannot drift from the code it describes.

- ``docs/cli.md`` documents every option of every subcommand of the parser that
  ``fastapsp`` runs (``fastapsp.cli._build_parser``), in that subcommand's section,
  and names no ``--flag`` the subcommand does not have.
- Every relative link of ``README.md`` and ``docs/*.md`` points to a file that exists.
- The README's quick start is two commands, and the README stays under 150 lines.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from fastapsp.cli import _build_parser

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
CLI_DOC = DOCS / "cli.md"

# docs/cli.md has a section per subcommand, a level-2 heading "## `fastapsp NAME`"; other level-2
# sections (and the text before the first heading of either kind) are general.
_HEADING = re.compile(r"^## (.*)$", re.MULTILINE)
_SUBCOMMAND = re.compile(r"^`fastapsp ([a-z][a-z0-9-]*)`")
_LONG_FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _options(parser: argparse.ArgumentParser) -> set[str]:
    """Every option string of ``parser`` (``-k``, ``--output``, ...), argparse's own -h/--help included."""
    return {s for action in parser._actions for s in action.option_strings}


def _sections(text: str) -> tuple[str, dict[str, str]]:
    """docs/cli.md cut at its level-2 headings: the general text, and each subcommand section's text."""
    marks = list(_HEADING.finditer(text))
    general = [text[:marks[0].start()] if marks else text]
    sections = {}
    for i, mark in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        name = _SUBCOMMAND.match(mark.group(1))
        if name:
            sections[name.group(1)] = text[mark.end():end]
        else:
            general.append(text[mark.start():end])
    return "\n".join(general), sections


def _mentions(text: str, option: str) -> bool:
    """``option`` appears in ``text`` as a word of its own (``-k`` not inside ``--keep``)."""
    return re.search(r"(?<![\w-])" + re.escape(option) + r"(?![\w-])", text) is not None


def test_the_parser_has_subcommands():
    # The checks below walk the subcommands; an empty walk would pass without checking anything.
    assert {"solve", "partition", "path", "info"} <= set(_subcommands(_build_parser()))


def test_every_subcommand_and_option_of_the_parser_is_in_docs_cli():
    parser = _build_parser()
    general, sections = _sections(CLI_DOC.read_text(encoding="utf-8"))
    missing = []
    for option in sorted(_options(parser) - {"-h", "--help"}):
        if not _mentions(general, option):
            missing.append(f"fastapsp {option} (outside the subcommand sections)")
    for name, sub in _subcommands(parser).items():
        if name not in sections:
            missing.append(f"a section '## `fastapsp {name}`'")
            continue
        for option in sorted(_options(sub) - {"-h", "--help"}):
            if not _mentions(sections[name], option):
                missing.append(f"fastapsp {name} {option}")
    assert not missing, "docs/cli.md does not document: " + ", ".join(missing)


def test_every_flag_in_docs_cli_exists_in_the_parser():
    parser = _build_parser()
    subcommands = _subcommands(parser)
    general, sections = _sections(CLI_DOC.read_text(encoding="utf-8"))
    # General text may name any subcommand's flags; a subcommand's section only its own.
    anywhere = _options(parser).union(*(_options(sub) for sub in subcommands.values()))
    unknown = [f"{flag} (outside the subcommand sections)"
               for flag in sorted(set(_LONG_FLAG.findall(general)) - anywhere)]
    for name, text in sections.items():
        if name not in subcommands:
            unknown.append(f"a section for a subcommand the parser lacks: fastapsp {name}")
            continue
        for flag in sorted(set(_LONG_FLAG.findall(text)) - _options(subcommands[name])):
            unknown.append(f"fastapsp {name} {flag}")
    assert not unknown, "docs/cli.md names what the parser does not have: " + ", ".join(unknown)


def test_the_section_splitter_sees_flags():
    # The two tests above must be able to fail: a made-up page is cut and read as they read docs/cli.md.
    general, sections = _sections("intro `--version`\n## `fastapsp solve`\n`--output` and `-k`\n"
                                  "## Environment\n`--quiet`\n## `fastapsp info`\nnothing\n")
    assert set(sections) == {"solve", "info"}
    assert _mentions(sections["solve"], "-k") and not _mentions(sections["solve"], "--quiet")
    assert _LONG_FLAG.findall(general) == ["--version", "--quiet"]
    assert not _mentions("--keep", "-k")


def _markdown_files() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


@pytest.mark.parametrize("path", _markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_point_to_existing_files(path):
    text = _FENCE.sub("", path.read_text(encoding="utf-8"))  # code blocks hold no links
    broken = []
    for target in _LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):  # a URL, or an anchor here
            continue
        file_part = target.split("#", 1)[0]
        if not (path.parent / file_part).exists():
            broken.append(target)
    assert not broken, f"{path.relative_to(ROOT)}: links to missing files: {', '.join(broken)}"


def test_docs_pages_exist():
    # The links test only checks the pages that exist: the pages the README promises must be there.
    for page in ("cli", "python", "algorithm", "gpus", "mpi", "formats", "outputs", "stats", "performance",
                 "reliability"):
        assert (DOCS / f"{page}.md").is_file(), f"docs/{page}.md is missing"


def _quick_start_commands(text: str) -> list[str]:
    match = re.search(r"^## Quick start\n(.*?)^## ", text, re.MULTILINE | re.DOTALL)
    assert match, "README.md has no '## Quick start' section"
    block = re.search(r"^```(?:bash|sh|console)?\n(.*?)^```", match.group(1), re.MULTILINE | re.DOTALL)
    assert block, "README.md's quick start has no code block"
    lines = [line.strip() for line in block.group(1).splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def test_readme_quick_start_is_two_commands_and_the_readme_is_short():
    text = README.read_text(encoding="utf-8")
    commands = _quick_start_commands(text)
    assert len(commands) == 2, f"README.md's quick start has {len(commands)} commands, not 2: {commands}"
    assert not any(line.endswith("\\") for line in commands), "a quick-start command continues on another line"
    lines = text.count("\n") + (0 if text.endswith("\n") else 1)
    assert lines < 150, f"README.md has {lines} lines; it must stay under 150"


def test_install_and_both_examples_are_on_the_first_screen():
    first = README.read_text(encoding="utf-8").splitlines()[:55]
    text = "\n".join(first)
    for needle in ("pip install", "```python", "fastapsp.solve("):
        assert needle in text, f"README.md's first 55 lines lack {needle!r}"
    assert any(line.startswith("fastapsp solve ") for line in first), "README.md's first 55 lines lack a CLI example"


def test_the_quick_start_counter_counts():
    # The two-command check must be able to fail: three commands are three.
    text = "## Quick start\n\n```bash\na\n# note\n\nb\nc\n```\n\n## Next\n"
    assert _quick_start_commands(text) == ["a", "b", "c"]
