"""The README and docs/ stay true to the commands they show: every `mmbench ...` command line names
a real command and only options that command takes; every relative link (results/ and scripts/
indexes too) resolves."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest

from mmbench.cli import main

REPO = Path(__file__).resolve().parent.parent
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
INDEXES = [REPO / "results" / "README.md", *sorted((REPO / "results").glob("*/README.md")), REPO / "scripts" / "README.md"]


def _command_lines(text: str) -> list[str]:
    """`mmbench ...` as written in code spans and indented or fenced code lines (continuations joined)."""
    text = re.sub(r"```.*?```", "", text.replace("\\\n", " "), flags=re.S)  # fenced blocks show output
    spans = re.findall(r"`(mmbench [^`]+)`", text)
    code = [line.strip() for line in text.splitlines() if re.match(r"^( {4,}|\t)(\S+=\S+ )*mmbench ", line)]
    return spans + [re.sub(r"^(\S+=\S+ )*", "", line) for line in code]


def _resolve(words: list[str]) -> tuple[click.Command, list[str]]:
    """The command the words name (through groups such as `plot`) and the words left."""
    command, ctx = main, click.Context(main)
    while isinstance(command, click.Group) and words:
        if words[0].startswith("-"):  # a group's own option (mmbench -f FILE run ...) before its command
            option = next((p for p in command.params if words[0] in getattr(p, "opts", ())), None)
            if option is None:
                break
            words = words[1 if getattr(option, "is_flag", False) else 2:]
            continue
        if not words[0].islower():  # a placeholder (NAME, ...): any command of the group
            return command, []
        sub = command.get_command(ctx, words[0])
        if sub is None:
            raise AssertionError(f"no command '{words[0]}' in `mmbench {' '.join(words)}`")
        command, words = sub, words[1:]
    return command, words


def _options(command: click.Command) -> set[str]:
    names = {"--help", "-h"}
    for param in command.params:
        names.update(getattr(param, "opts", ()))
        names.update(getattr(param, "secondary_opts", ()))
    return names


def _cases():
    for page in PAGES:
        for line in _command_lines(page.read_text(encoding="utf-8")):
            yield pytest.param(line, id=f"{page.name}: {line[:60]}")


@pytest.mark.parametrize("line", list(_cases()))
def test_shown_commands_and_options_exist(line):
    try:
        words = shlex.split(line.split("#")[0].replace("...", "ANY"))[1:]
    except ValueError:
        words = line.split()[1:]
    command, rest = _resolve(words)
    known = _options(command)
    unknown = [w.split("=")[0] for w in rest if w.startswith("-") and w.split("=")[0] not in known
               and not re.fullmatch(r"-\d.*", w)]
    assert not unknown, f"`{line}`: {command.name} takes no {unknown}"


@pytest.mark.parametrize("page", PAGES + INDEXES, ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_resolve(page):
    links = [t for t in re.findall(r"\]\(([^)#\s]+)[^)]*\)", page.read_text(encoding="utf-8")) if "://" not in t]
    missing = [t for t in links if not (page.parent / t).exists()]
    assert not missing, f"{page.name} links to {missing}"


def test_quoted_help_text_is_what_the_command_prints():
    """docs/figures.md quotes `mmbench plot --help`'s list of figure families: every family, each line as
    the command prints it at 80 columns."""
    import os
    import subprocess
    import sys

    printed = subprocess.run([sys.executable, "-m", "mmbench", "plot", "--help"], capture_output=True, text=True,
                             env={**os.environ, "COLUMNS": "80"}, cwd=REPO, check=True).stdout
    listed = printed[printed.index("Commands:"):].rstrip("\n")
    page = (REPO / "docs" / "figures.md").read_text()
    quoted = re.search(r"```\n(Commands:\n.*?)\n```", page, flags=re.S).group(1)
    assert quoted == listed


def test_the_readmes_quoted_test_line_has_the_shape_pytest_prints():
    """The README quotes the test command's closing line from a clean-clone CI run: counts of passed and
    skipped tests, warnings where there were some, and the time, as pytest words it."""
    readme = (REPO / "README.md").read_text()
    line = re.search(r"```\n(\d+ passed.*)\n```", readme).group(1)
    assert re.fullmatch(r"\d+ passed, \d+ skipped(, \d+ warnings?)? in \d+\.\d+s \(\d+:\d\d:\d\d\)", line), line
