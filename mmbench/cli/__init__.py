"""The command line: Click commands that parse and validate, then call the modules that do the
work (engine/ for running, tuning/ for tuning, studies/ and plots.py for pictures). One
module per family of commands: listing, running (run, tune), gpu (info, ceilings, profile), figures
(plot, table, report)."""

from __future__ import annotations

import difflib
import importlib
import sys

import click

from .. import environment
from ..engine.outcome import file_counts, interrupted_message
from ..engine.refusals import RunAborted, RunInterrupted, RunRefused
from ..variants import VariantError, files
from .common import ARGV, COUNTED_OUTPUT, InputError, Interrupted, RunFailed


# Each command's module (its COMMANDS name the functions); imported when the command is used.
COMMAND_HOMES = {"list": "listing", "run": "running", "check": "checking", "tune": "tune",
                 "tune-benchmark": "tune_benchmark", "compare": "comparing", "info": "gpu", "ceilings": "gpu",
                 "profile": "gpu", "verify-timing": "gpu", "plot": "figures", "table": "figures", "report": "figures"}


class OneLineErrors(click.Group):
    """Click's own usage errors (an unknown option, a value outside its choices or range) as one
    line naming the bad value, exit 2, like mmbench's own InputError, without the usage text; the
    workflow's refusals exit 2 and its aborts exit 1, the same way; Ctrl-C exits 130."""

    def main(self, args=None, *rest, **kwargs):
        ARGV[:] = ["mmbench", *(sys.argv[1:] if args is None else args)]  # as typed, for the metadata
        environment.WHOLE_COMMAND[:] = [True]  # its first run's metadata records the whole command's time
        return super().main(args, *rest, **kwargs)

    def list_commands(self, ctx):
        return sorted(COMMAND_HOMES)

    def get_command(self, ctx, name):
        """A command's module is imported when the command is asked for: `mmbench run` then starts
        without what only other commands import (pandas for compare, report and tune's analysis)."""
        home = COMMAND_HOMES.get(name)
        if home is not None and name not in self.commands:
            module = importlib.import_module(f"{__package__}.{home}")
            for function in module.COMMANDS:
                self.add_command(getattr(module, function))
        return super().get_command(ctx, name)

    def resolve_command(self, ctx, args):
        """Click's own, its "Did you mean" hint drawn from every command, not only those loaded."""
        try:
            return super().resolve_command(ctx, args)
        except click.exceptions.NoSuchCommand as exc:
            exc.possibilities = difflib.get_close_matches(str(args[0]), self.list_commands(ctx)) or None
            raise

    def format_commands(self, ctx, formatter):
        """The command list with each command's first sentence whole, wrapped to the terminal: Click
        would cut it to one line ending in "...", mid-phrase at 80 columns."""
        rows = [(name, cmd.get_short_help_str(limit=10_000)) for name in self.list_commands(ctx)
                if (cmd := self.get_command(ctx, name)) is not None and not cmd.hidden]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:
            if type(exc).__name__ == "NoArgsIsHelpError":  # a bare command shows its help
                raise
            hint = (" (it goes before the command: mmbench --variant-file FILE COMMAND ...)"
                    if "--variant-file" in exc.format_message() or "'-f'" in exc.format_message() else "")
            raise InputError(" ".join(exc.format_message().split()) + hint) from None
        except RunRefused as exc:
            raise InputError(str(exc)) from None
        except RunInterrupted as exc:
            raise Interrupted(str(exc)) from None
        except RunAborted as exc:
            raise RunFailed(str(exc)) from None
        except KeyboardInterrupt:  # one line, not Click's "Aborted!": what the run's file holds, where there is one
            output = ctx.meta.get(COUNTED_OUTPUT)
            raise Interrupted(interrupted_message(output, file_counts(output)) if output else "interrupted") from None


@click.group(cls=OneLineErrors, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="mmbench")
@click.option("--variant-file", "-f", "variant_files", multiple=True, metavar="TOML",
              envvar=files.ENVIRONMENT,
              help="Your own kernels: a variant file (TOML beside your .cu files) whose variants every command then "
                   "takes by name beside the built-in ones (list, run, tune, profile, verify-timing, plot, --cluster). "
                   f"Repeat for more files, or name them in ${files.ENVIRONMENT} (':'-separated). Goes before the "
                   "command: mmbench -f mine.toml run -v mine,cublas. `mmbench check FILE` checks one; see "
                   "docs/your-kernels.md.")
@click.pass_context
def main(ctx, variant_files):
    """mmbench: sweep, time, verify and plot GPU matrix kernels: the built-in ones of five papers, and yours."""
    try:
        files.use(variant_files)
    except VariantError as exc:  # said with where the file was named, when the user typed no option
        source = ctx.get_parameter_source("variant_files")
        where = f"${files.ENVIRONMENT} names " if source == click.core.ParameterSource.ENVIRONMENT else ""
        raise InputError(where + str(exc)) from None


