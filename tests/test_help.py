"""`mmbench --help` lists every command with its first sentence whole, wrapped to the terminal,
never cut to a line ending in "..." (as Click does by default)."""

from __future__ import annotations

import click
from click.testing import CliRunner

from mmbench.cli import main


def test_the_command_list_shows_each_commands_first_sentence_whole(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    result = CliRunner().invoke(main, ["--help"], terminal_width=80)
    assert result.exit_code == 0, result.output
    listing = " ".join(result.output.split("Commands:", 1)[1].split())
    ctx = click.Context(main)
    for name in main.list_commands(ctx):
        sentence = main.get_command(ctx, name).get_short_help_str(limit=10_000)
        assert f"{name} {' '.join(sentence.split())}" in listing, name
    commands = result.output.split("Commands:", 1)[1].splitlines()
    assert not any(line.rstrip().endswith("...") for line in commands)
    assert max(len(line) for line in result.output.splitlines()) <= 80
