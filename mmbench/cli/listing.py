"""`mmbench list`: the registry as a table, or one variant in full."""

from __future__ import annotations

import click
from rich.table import Table

from ..ops import get_op
from ..variants import REGISTRY, VariantError, format_params, get_variant, param_points, space_text
from ..engine.options import split
from .common import InputError, command, console

COMMANDS = ("list_variants",)


@command("list")
@click.option("--variant", "-v", "names", multiple=True, metavar="NAME[,NAME...]",
              help="Show these variants in full: description, parameters and defaults, constraints, tuning space.")
@click.option("--wide", is_flag=True, help="Every column: one wide table where the terminal is wide enough (about 130 "
                                           "columns), else a paragraph a variant.")
def list_variants(names, wide):
    """Show the variants: a compact table that fits the terminal, one variant in full with -v NAME."""
    if names:
        if wide:
            raise InputError("--wide widens the table of every variant; -v shows variants in full, one fact a line: "
                             "give one of them")
        try:
            chosen = [get_variant(n) for n in split(names) or [""]]
        except VariantError as exc:
            raise InputError(str(exc)) from None
        for v in chosen:
            _print_variant(v)
        return
    rows = [_row(v) for v in REGISTRY.values()]
    for fixed, wrapped, title in WIDE if wide else COMPACT:
        if _fits(rows, fixed, wrapped, console.width):
            console.print(_table(rows, fixed, wrapped, title))
            return
    # narrower than any table: one variant a paragraph, every fact of the listing at any width
    console.print("\n".join(line for row in rows for line in _paragraph(row, console.width, wide)))


# The tables, widest first, the first that fits the terminal is shown: the columns shown whole
# (no_wrap), then those folded into the width left, each at least as wide as given here.
COMPACT = ((("name", "op", "space"), {"paper label": 12}, "mmbench variants (details: mmbench list -v NAME)"),
           (("name", "space"), {"paper label": 12}, "mmbench variants (op and details: mmbench list -v NAME)"))
WIDE = ((("name", "op", "backend", "space"), {"paper label": 12, "parameters (default)": 20, "what it does": 30},
         "mmbench variants"),)
ORDER = ("name", "op", "backend", "paper label", "space", "parameters (default)", "what it does")


def _row(v) -> dict[str, str]:
    return {"name": v.name, "op": v.op, "backend": v.backend, "paper label": v.label,
            "space": space_text(v) if v.space else "-",
            "parameters (default)": format_params(param_points(v)[0]).replace(",", " ") or "-",
            "what it does": v.description}


def _fits(rows: list[dict], fixed: tuple[str, ...], wrapped: dict[str, int], width: int) -> bool:
    """Whether a table of these columns fits: the fixed ones whole, the others at their least width
    (rich's box: a rule before each column and after the last, a space either side of each cell)."""
    whole = sum(max(len(c), *(len(r[c]) for r in rows)) for c in fixed)
    columns = len(fixed) + len(wrapped)
    return whole + sum(wrapped.values()) + 3 * columns + 1 <= width


def _table(rows: list[dict], fixed: tuple[str, ...], wrapped: dict[str, int], title: str) -> Table:
    """The listing's table of these columns, in the listing's order."""
    table = Table(title=title)
    for col in (c for c in ORDER if c in fixed or c in wrapped):
        if col in fixed:
            table.add_column(col, no_wrap=True, justify="right" if col == "space" else "left")
        else:
            table.add_column(col, overflow="fold")  # no min_width: rich would widen it past the terminal
    for r in rows:
        table.add_row(*(r[c] for c in ORDER if c in fixed or c in wrapped))
    return table


def _paragraph(row: dict, width: int, wide: bool) -> list[str]:
    """One variant of the listing for a terminal too narrow for its table; wide: with its
    parameters and description."""
    import textwrap

    head = f"{row['name']} ({row['op']}" + (f", {row['backend']}" if wide else "") + \
        f"): {row['paper label']}; tuning space {row['space']}"
    lines = textwrap.wrap(head, width=width, subsequent_indent="    ", break_on_hyphens=False)
    if wide:
        fill = dict(width=width, initial_indent="  ", subsequent_indent="    ", break_on_hyphens=False)
        lines += textwrap.wrap(f"parameters: {row['parameters (default)']}", **fill)
        lines += textwrap.wrap(row["what it does"], **fill)
    return lines


def _declared(v) -> list[str]:
    """What a variant file declares of its kernel's launch."""
    return [f"  kernel: {v.source_dir / (v.family + '.cu')}, entry {v.entry_name}",
            f"  arguments: ({', '.join(v.arguments)})"
            + (f"   [{get_op(v.op).layout}]" if (v.dtypes, v.layouts) == (("fp32",), ("nn",)) else ""),
            f"  block: ({', '.join(v.threads)})   grid: ({', '.join(v.grid)})"
            + (f"   dynamic shared bytes: {v.shared}" if v.shared != "0" else ""),
            *([f"  defines bound to the shape: {', '.join(f'{n} = {e}' for n, e in v.defines.items())}"]
              if v.defines else []),
            *(["  adds into its output: zeroed before every launch"] if v.zero_output else []), *_modern_launch(v)]


def _modern_launch(v) -> list[str]:
    """The cluster and the tensor maps a kernel is launched with (through cuda-python), a line each."""
    return [*([f"  cluster: ({', '.join(v.cluster)}) blocks"] if v.cluster else []),
            *(f"  tensor map of {t.buffer}: box ({', '.join(t.box)}), swizzle {t.swizzle} B, passed as map_{t.buffer}"
              for t in v.tensor_maps)]


def _print_variant(v) -> None:
    """Everything the registry knows of one variant, one fact a line (fits any terminal)."""
    origin = f"variant file {v.origin}" if v.origin else f"paper {v.paper}" if v.paper else "beyond the papers"
    lines = [f"{v.name}: {v.label} ({v.op}, {v.backend}, {origin})", *([f"  {v.description}"] if v.description else [])]
    if v.origin:
        lines += _declared(v)
    elif v.family:
        lines.append(f"  kernel: kernels/{v.family}.cu, entry {', '.join(get_op(v.op).entries(v))}")
        lines += _modern_launch(v)
    if (v.dtypes, v.layouts) != (("fp32",), ("nn",)):  # docs/precisions.md says what each holds
        lines.append(f"  takes: {', '.join(v.dtypes)} at layout {', '.join(v.layouts)}")
    lines += [f"  requires: {r}" for r in v.requires]
    for name, values in v.axes.items():
        axis = v.space.get(name)
        tuned = f"  (tuned over {'/'.join(map(str, axis))})" if axis and len(axis) > 1 else ""
        lines.append(f"  {name} = {'/'.join(map(str, values))}{tuned}")
    lines += [f"  constraint: {c}" for c in v.constraints]
    if v.space:
        lines.append(f"  tuning space: {space_text(v)} points satisfy the constraints")
    console.print("\n".join(lines), soft_wrap=True)
