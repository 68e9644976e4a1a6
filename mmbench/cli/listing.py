"""`mmbench list`: the registry as a table, or one variant in full."""

from __future__ import annotations

import click
from rich.table import Table

from ..ops import get_op
from ..variants import REGISTRY, VariantError, format_params, get_variant, param_points, tuning_space
from .common import InputError, _split, command, console

COMMANDS = ("list_variants",)


@command("list")
@click.option("--variant", "-v", "names", multiple=True, metavar="NAME[,NAME...]",
              help="Show these variants in full: description, parameters and defaults, constraints, tuning space.")
@click.option("--wide", is_flag=True, help="One wide table with every column (for a wide terminal).")
def list_variants(names, wide):
    """Show the variants: a compact table by default, one variant in full with -v NAME."""
    if names:
        if wide:
            raise InputError("--wide widens the table of every variant; -v shows variants in full, one fact a line: "
                             "give one of them")
        try:
            chosen = [get_variant(n) for n in _split(names) or [""]]
        except VariantError as exc:
            raise InputError(str(exc)) from None
        for v in chosen:
            _print_variant(v)
        return
    table = Table(title="mmbench variants" + ("" if wide else " (details: mmbench list -v NAME)"))
    for col in ("name", "op") + (("backend",) if wide else ()) + ("paper label",):
        table.add_column(col, no_wrap=True)
    table.add_column("space", justify="right", no_wrap=True)
    if wide:
        table.add_column("parameters (default)")
        table.add_column("what it does")
    for v in REGISTRY.values():
        space = str(len(tuning_space(v))) if v.space else "-"
        if wide:
            table.add_row(v.name, v.op, v.backend, v.label, space,
                          format_params(param_points(v)[0]).replace(",", " ") or "-", v.description)
        else:
            table.add_row(v.name, v.op, v.label, space)
    console.print(table)


def _print_variant(v) -> None:
    """Everything the registry knows of one variant, one fact a line (fits any terminal)."""
    lines = [f"{v.name}: {v.label} ({v.op}, {v.backend}, paper {v.paper})", f"  {v.description}"]
    if v.family:
        lines.append(f"  kernel: kernels/{v.family}.cu, entry {', '.join(get_op(v.op).entries(v))}")
    for name, values in v.axes.items():
        axis = v.space.get(name)
        tuned = f"  (tuned over {'/'.join(map(str, axis))})" if axis else ""
        lines.append(f"  {name} = {'/'.join(map(str, values))}{tuned}")
    lines += [f"  constraint: {c}" for c in v.constraints]
    if v.space:
        lines.append(f"  tuning space: {len(tuning_space(v))} points satisfy the constraints")
    console.print("\n".join(lines), soft_wrap=True)
