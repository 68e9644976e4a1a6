"""The AMD tiling study's shapes, kernels and lines, and the measures of the run that its claims,
figures and report share: each step's times and rates by shape, cut to a shape family, the speedups
over naive, the % of cuBLAS, the tile sweep's table and register over LDS tiling."""

from __future__ import annotations

import pandas as pd

from ...analysis import along, by_shape, ok_rows, shape_ratio
from ...results import ResultsError
from ...variants import REGISTRY, format_params, param_points

BASE = 1024  # the fixed dimensions of the m, n and k families
ALIGN = 64  # the register tile's rows (64 x 32 at WARP = 32): a shape aligned to every kernel's tiles
REGISTER_DEFAULT = format_params(param_points(REGISTRY["register_tiling"])[0])
# The tutorial's own layout: its 4 x 4 thread tiles on AMD's 64-wide wavefront (128 x 32, 256 threads)
REGISTER_WAVEFRONT = format_params(param_points(REGISTRY["register_tiling"], {"WARP": (64,)})[0])
SIGNIFICANT = 1.5  # our reading of "significant speedups": LDS tiling at least 1.5 x naive
MATTERS = 0.10  # a dependence counts when a ratio moves by more than this
SEVERAL = 3.0  # our reading of "several times" (a factor, rule.by_factor) and of "inordinate" cache traffic (a line)
HELD = 50  # a roof holds a kernel when the kernel reaches at least this % of it (our line, for the hierarchy)
REDUCES = 2.0  # our reading of "dramatically reduce" / "eliminates many": a count falls at least 2 x
# The companion run at the tutorial's wavefront (register tiling at WARP = 64 with its own LDS and
# cuBLAS rows, every shape of the study), kept beside the reference run
WAVEFRONT_RUN = ("warp64", "amd-tiling-warp64")
# The tutorial's steps: (our variant, parameters, the tutorial's name)
STEPS = (("naive", "BLOCK=16", "naive"), ("shared", "BLOCK=16", "LDS tiling (16 x 16)"),
         ("register_tiling", REGISTER_DEFAULT, "register tiling (4 x 4 a thread)"))
CUBLAS = ("cublas", "", "cuBLAS")
FAMILIES = (("square", "n", "square n x n x n"), ("m", "m", f"along m (tall): m x {BASE} x {BASE}"),
            ("n", "n", f"along n (wide): {BASE} x n x {BASE}"), ("k", "k", f"along k: {BASE} x {BASE} x k"))


def _plain(df: pd.DataFrame) -> pd.DataFrame:
    return df[(df.scope == "kernel") & (df.pad == 0)]


def step_values(df: pd.DataFrame, column: str = "time_ms_median") -> dict[str, pd.Series]:
    """Per step of the tutorial (and cuBLAS): column by shape (m, n, k)."""
    plain = _plain(df)
    out = {name: by_shape(plain, column, variant=v, params=p) for v, p, name in (*STEPS, CUBLAS)}
    return {k: v for k, v in out.items() if len(v)}


def family(values: pd.Series, name: str) -> pd.Series:
    """A by-shape Series cut to one family, by its varying dimension."""
    fixed = {} if name == "square" else {d: BASE for d in "mnk" if d != name}
    return along(values, "n" if name == "square" else name, **fixed)


def aligned(size: int) -> bool:
    """Whether a family's shape of this varying size is aligned (its fixed dimensions are)."""
    return size % ALIGN == 0


def _steps_past(first: int) -> str:
    """The tutorial's steps from index first + 1, as 'naive (BLOCK=16) or shared (BLOCK=16)'."""
    return " or ".join(f"{v} ({p})" for v, p, _ in STEPS[first + 1:])


def speedups(df: pd.DataFrame) -> dict[str, pd.Series]:
    """Each step's (and cuBLAS's) speedup over naive, by shape: naive time / its time."""
    t = step_values(df)
    if "naive" not in t:
        raise ResultsError("the speedups need the naive kernel's rows (naive, BLOCK=16)")
    if len(t) == 1:
        raise ResultsError(f"the speedups need a step past naive: {_steps_past(0)} rows at naive's shapes")
    return {name: shape_ratio(t["naive"], s) for name, s in t.items() if name != "naive"}


def percent_of_cublas(df: pd.DataFrame) -> dict[str, pd.Series]:
    g = step_values(df, "gflops_median")
    if "cuBLAS" not in g:
        raise ResultsError("the % of cuBLAS needs cuBLAS rows")
    if len(g) == 1:
        raise ResultsError(f"the % of cuBLAS needs a step of the tutorial: {_steps_past(-1)} rows")
    return {name: 100 * shape_ratio(s, g["cuBLAS"]) for name, s in g.items() if name != "cuBLAS"}


def percent_of_cublas_at(df: pd.DataFrame, kernels) -> dict[str, pd.Series]:
    """Each (variant, params, name) kernel's GFLOP/s as % of cuBLAS's, by shape (those measured)."""
    plain = _plain(ok_rows(df))
    cublas = by_shape(plain, "gflops_median", variant=CUBLAS[0], params=CUBLAS[1])
    out = {name: by_shape(plain, "gflops_median", variant=v, params=p) for v, p, name in kernels}
    return {name: 100 * shape_ratio(s, cublas) for name, s in out.items() if len(s) and len(cublas)}


def tile_table(df: pd.DataFrame) -> pd.DataFrame:
    """register_tiling's GFLOP/s (median) by configuration (TM x TN, KT, WARP) and shape, and
    shared's by BLOCK: every configuration the run measured at a shape measured more than once."""
    ok = _plain(ok_rows(df))
    rows = ok[ok.variant.isin(["shared", "register_tiling"])]
    counts = rows.groupby(["m", "n", "k"]).params.nunique()
    shapes = counts[counts > 2].index
    if not len(shapes):
        raise ResultsError("the tile-size figure needs shapes measured at several tile configurations")
    rows = rows.set_index(["m", "n", "k"]).loc[shapes].reset_index()
    rows["shape"] = [f"{m}x{n}x{k}" for m, n, k in zip(rows.m, rows.n, rows.k)]
    rows["config"] = [_config(v, p) for v, p in zip(rows.variant, rows.params)]
    table = rows.pivot_table(index="config", columns="shape", values="gflops_median", aggfunc="mean")
    order = {c: (v != "shared", *_numbers(p)) for c, v, p in zip(rows.config, rows.variant, rows.params)}
    return table.loc[sorted(table.index, key=order.get)]


def _numbers(params: str) -> tuple[int, ...]:
    """A configuration's sort key: BLOCK, then TM, TN, KT, then the rest, as numbers."""
    p = dict(item.split("=") for item in params.split(",") if item)
    return tuple(int(p.get(k, 0)) for k in ("BLOCK", "TM", "TN", "KT", "WARP", "WTN", "BWM", "BWN", "APAD"))


def _config(variant: str, params: str) -> str:
    p = dict(item.split("=") for item in params.split(",") if item)
    if variant == "shared":
        return f"LDS {p.get('BLOCK')} x {p.get('BLOCK')}"
    default = dict(item.split("=") for item in REGISTER_DEFAULT.split(","))
    other = {k: v for k, v in p.items() if k not in ("TM", "TN", "KT") and default.get(k) != v}
    return f"reg {p.get('TM')}x{p.get('TN')} KT={p.get('KT')}" + "".join(f" {k}={v}" for k, v in other.items())


# The kernels under the tutorial's names in the memory-hierarchy figure and tables (both widths there)
KERNEL_NAMES = {(STEPS[0][0], STEPS[0][1]): "naive (16 x 16)", (STEPS[1][0], STEPS[1][1]): STEPS[1][2],
                ("register_tiling", REGISTER_DEFAULT): "register tiling (4 x 4 a thread), WARP = 32",
                ("register_tiling", REGISTER_WAVEFRONT): "register tiling (4 x 4 a thread), WARP = 64",
                CUBLAS[:2]: CUBLAS[2]}


def hierarchy_profile(profile: pd.DataFrame | None, wave_profile: pd.DataFrame | None) -> pd.DataFrame | None:
    """The reference run's profile with the companion's register tiling at WARP = 64 added (its LDS
    rows are the reference's kernel again)."""
    if profile is None:
        return None
    extra = [] if wave_profile is None else [wave_profile[wave_profile.variant == "register_tiling"]]
    return pd.concat([profile, *extra], ignore_index=True)


# Its reference run in the repository: what a command suggests when no run of the user's will do.
REFERENCE_RUN = "results/amd-tiling-h100/amd-tiling-h100.csv"


def _span(r: pd.Series) -> str:
    return f"{r.min():.2f} to {r.max():.2f}" if len(r) else "-"


def register_over_lds(df: pd.DataFrame, params: str) -> pd.Series:
    """By shape: LDS tiling's (shared, BLOCK=16) time over register tiling's at these parameters,
    at every shape both were measured; above 1, register tiling is faster."""
    plain = _plain(ok_rows(df))
    return shape_ratio(by_shape(plain, variant=STEPS[1][0], params=STEPS[1][1]),
                       by_shape(plain, variant="register_tiling", params=params))


# The tutorial's profile claims, judged from Nsight Compute's counts (`mmbench profile`)
PROFILE = "`mmbench profile --config configs/amd-tiling.toml --points 1024,4096 -v naive,shared,register_tiling,cublas " \
          "--results results/amd-tiling-h100/amd-tiling-h100.csv`"
# ... and register tiling at the tutorial's width beside LDS tiling, from the companion run
WAVE_PROFILE = "`mmbench profile -v register_tiling,shared --points 1024,4096 --results " \
               "results/amd-tiling-h100/warp64/amd-tiling-warp64.csv`"


def _shape(shape: tuple) -> str:
    return "x".join(str(int(d)) for d in shape)


def wavefront_command(df: pd.DataFrame) -> str:
    """The run that would judge register tiling at WARP = 64 at every shape LDS tiling was timed at."""
    plain = _plain(ok_rows(df))
    lds = plain[(plain.variant == STEPS[1][0]) & (plain.params == STEPS[1][1])]
    shapes = ",".join(f"{m}x{n}x{k}" for m, n, k in sorted(set(zip(lds.m, lds.n, lds.k))))
    return f"`mmbench run -v register_tiling --params WARP=64 --sizes {shapes}`"
