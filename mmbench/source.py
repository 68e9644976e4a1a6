"""Kernel sources: read kernels/<op>/<file>.cu, expand its `#include "common/..."` headers in
place, prepend the parameter #defines, compile with nvcc.

Headers are expanded here rather than found by nvcc through -I: the text compiled (and the
compile cache's key) is then the whole program, the same in a wheel, a checkout or a temporary
folder, and the source hash that keys the tuning cache covers every header a kernel uses.

``module_build`` compiles ``module_source`` once per host (``nvcc --cubin <options> -arch sm_XX
-Xptxas -v kernel.cu``): the cubin the GPU loads (PyCUDA's module_from_buffer, or cuda-python's for
kernels launched through launch_ex.py) and ptxas's report (registers, shared memory, spills), both
kept on disk. The CI compile check runs the very same command on the same text, so it tests what
the GPU will run.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

from .variants import Params, Variant

# Options given to SourceModule (it adds -arch itself). -lineinfo lets Nsight Compute map
# samples back to source lines and does not change the generated code.
NVCC_OPTIONS = ("-lineinfo",)
DEFAULT_ARCH = "sm_90"

def nvcc_options(variant: Variant) -> tuple[str, ...]:
    """The options SourceModule gets for a variant: mmbench's, then its variant file's (the safe ones
    variants/files.py lets through)."""
    return (*NVCC_OPTIONS, *variant.nvcc_options)


def build_arch(variant: Variant, device_arch: str) -> str:
    """The architecture a variant's kernel is built for: its variant file's target, else the GPU's."""
    return variant.target or device_arch


def target_problem(variant: Variant, device_arch: str) -> str | None:
    """Why a variant's target cannot run on a GPU of this architecture (code for sm_90a runs on
    compute capability 9.0 alone, as code for sm_80 would need its PTX to run on another), or None."""
    if variant.launches_ex and int(device_arch[len("sm_"):]) < 90:
        return f"{variant.name} is launched in clusters or with TMA tensor maps (sm_90 or later); this GPU is {device_arch}"
    if not variant.target or variant.target.rstrip("a") == device_arch:
        return None
    return f"{variant.name} is built for {variant.target}; this GPU is {device_arch}"


class CompileError(RuntimeError):
    """nvcc failed; the message holds its first error line."""


@dataclass(frozen=True)
class PtxasReport:
    """What ptxas -v says of one entry function."""

    registers: int
    shared_bytes: int
    stack_bytes: int
    spill_store_bytes: int
    spill_load_bytes: int
    # The compiler's warnings about the module (the same for each of its entries): a #define of the
    # kernel's that redefines one of mmbench's makes the kernel compute another product, silently else
    warnings: tuple[str, ...] = ()

    @property
    def spills(self) -> bool:
        return self.spill_store_bytes > 0 or self.spill_load_bytes > 0


def kernels_dir() -> Path:
    """kernels/ inside an installed wheel, else the repository's kernels/ beside the package."""
    here = Path(__file__).resolve().parent
    packaged = here / "kernels"
    return packaged if packaged.is_dir() else here.parent / "kernels"


def source_path(variant: Variant) -> Path:
    if variant.family is None:
        raise ValueError(f"variant '{variant.name}' has no kernel source (backend {variant.backend})")
    return (variant.source_dir or kernels_dir()) / f"{variant.family}.cu"


def header(params: Params, filename: str) -> str:
    """#define per parameter, then #line 1 so nvcc's messages point at the real file and line."""
    defines = "".join(f"#define {name} {value}\n" for name, value in params)
    return f'{defines}#line 1 "{filename}"\n'


_INCLUDE = re.compile(r'^#include "([^"]+)"[ \t]*$', re.MULTILINE)
_PRAGMA_ONCE = re.compile(r"^#pragma once[ \t]*$", re.MULTILINE)


def _header(name: str, variant: Variant) -> Path:
    """A header named by an #include: beside the variant's own kernels/ first (another version of
    the kernels, outside the package), else in the package's."""
    for root in dict.fromkeys((variant.source_dir or kernels_dir(), kernels_dir())):
        if (root / name).is_file():
            return root / name
    raise CompileError(f"{source_path(variant).name}: #include \"{name}\" not found under kernels/")


def expanded(variant: Variant) -> tuple[str, dict[str, Path]]:
    """The kernel file with each `#include "..."` line replaced by that header's text (each header
    once; headers may include others), and the headers used. #line directives keep nvcc's messages
    on the real file and line. Not a preprocessor: an include is a line that starts with it, taken
    whatever #if surrounds it, so headers are included at the top level, unconditionally."""
    path = source_path(variant)
    used: dict[str, Path] = {}  # as the #include names it -> the file

    def expand(file: Path, label: str) -> str:
        text, out, line, last = file.read_text(), [], 1, 0
        for m in _INCLUDE.finditer(text):
            out.append(text[last:m.start()])
            line += text.count("\n", last, m.start())
            header = _header(m.group(1), variant)
            if m.group(1) not in used:
                used[m.group(1)] = header
                # Each header is taken once already; its #pragma once would draw nvcc's warning
                # about a pragma once in the main file (the line stays, blank, for numbering).
                text_of = _PRAGMA_ONCE.sub("", expand(header, m.group(1)))
                out.append(f'#line 1 "{m.group(1)}"\n' + text_of.rstrip("\n") + "\n")
            out.append(f'#line {line + 1} "{label}"')
            last = m.end()
        out.append(text[last:])
        return "".join(out)

    return expand(path, path.name), used


def module_source(variant: Variant, params: Params) -> str:
    path = source_path(variant)
    return header(params, path.name) + expanded(variant)[0]


def source_hash(variant: Variant) -> str:
    """sha256 of the kernel file and of each header it includes, first 16 hex digits: changes
    whenever any of them does. A kernel without headers hashes its own bytes alone (as before
    headers existed, so the tuning entries of untouched kernels stand)."""
    digest = hashlib.sha256(source_path(variant).read_bytes())
    for name, header_path in expanded(variant)[1].items():
        digest.update(b"\0" + name.encode() + b"\0" + header_path.read_bytes())
    return digest.hexdigest()[:16]


def nvcc_path() -> str | None:
    return shutil.which("nvcc")


@lru_cache(maxsize=1)
def nvcc_version() -> str | None:
    nvcc = nvcc_path()
    if nvcc is None:
        return None
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"release [\d.]+, (V[\d.]+)", out)
    return m.group(1) if m else out.strip().splitlines()[-1]


def nvcc_command(arch: str = DEFAULT_ARCH, options: tuple[str, ...] = NVCC_OPTIONS) -> list[str]:
    """The command line SourceModule runs, as a list (file name last)."""
    return ["nvcc", "--cubin", *options, "-arch", arch, "-Xptxas", "-v", "kernel.cu"]


_ENTRY = re.compile(r"Compiling entry function '(\w+)'")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")


def parse_ptxas(text: str) -> dict[str, PtxasReport]:
    """Per entry function, the numbers of an `nvcc -Xptxas -v` log."""
    reports: dict[str, PtxasReport] = {}
    for block in re.split(r"(?=ptxas info\s*: Compiling entry function)", text):
        entry = _ENTRY.search(block)
        used = _USED.search(block)
        if not entry or not used:
            continue
        # Non-inlined device functions report their own frames after the entry's; count them
        # with it (conservatively, with whichever entry they follow), so no spill goes unseen.
        frames = [tuple(map(int, f)) for f in _FRAME.findall(block)] or [(0, 0, 0)]
        stack, stores, loads = (max(f[0] for f in frames), sum(f[1] for f in frames), sum(f[2] for f in frames))
        smem = _SMEM.search(block)
        reports[entry.group(1)] = PtxasReport(int(used.group(1)), int(smem.group(1)) if smem else 0,
                                              stack, stores, loads, compiler_warnings(text))
    return reports


def compiler_warnings(log: str) -> tuple[str, ...]:
    """The warning lines of an nvcc log, each once, in order (ptxas's reports are not warnings)."""
    return tuple(dict.fromkeys(line.strip() for line in log.splitlines()
                               if re.search(r"\bwarning\b", line, re.IGNORECASE) and "ptxas info" not in line))


def compile_report(variant: Variant, params: Params, arch: str = DEFAULT_ARCH) -> PtxasReport:
    """ptxas's report of the variant's own entry function, compiled as SourceModule would (arch: the
    GPU's; a variant file's target replaces it)."""
    reports = compile_reports(variant, params, arch)
    return reports[entry_symbol(variant, reports)]


def entry_symbol(variant: Variant, reports: dict[str, PtxasReport]) -> str:
    """The symbol of the variant's entry function in its compiled module, read from what nvcc built:
    the name as written (an extern "C" kernel), or the one C++-mangled symbol of a function of that
    name (``_Z<length><name>...``, a kernel declared without extern "C")."""
    name = variant.entry_name
    if name in reports:
        return name
    mangled = sorted(s for s in reports if s.startswith(f"_Z{len(name)}{name}"))
    if len(mangled) == 1:
        return mangled[0]
    where = source_path(variant).name
    if mangled:
        raise CompileError(f"{where}: entry point '{name}' has {len(mangled)} overloads ({', '.join(mangled)}): "
                           f"declare one extern \"C\"")
    raise CompileError(f"{where}: entry point '{name}' is not in the compiled module; its entry functions: "
                       f"{', '.join(sorted(reports)) or 'none'}")


# The kept reports' format: changes whenever parse_ptxas or PtxasReport does, so none read back is stale.
REPORT_FORMAT = "ptxas-report-2"  # 2: the compiler's warnings


def cache_dir() -> Path:
    """mmbench's own cache of built things (compiled CPU baselines, kernel modules and their ptxas reports):
    MMBENCH_CACHE_DIR, else mmbench under XDG_CACHE_HOME or ~/.cache."""
    if os.environ.get("MMBENCH_CACHE_DIR"):
        return Path(os.environ["MMBENCH_CACHE_DIR"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mmbench"


def compile_reports(variant: Variant, params: Params, arch: str = DEFAULT_ARCH) -> dict[str, PtxasReport]:
    """Compile a variant as SourceModule would; ptxas's report of each of its entry functions (its
    own entry must be one of them). The source is read each time, so a kernel edited between two
    calls is compiled again (a notebook's next run); the reports are kept by module text."""
    reports = module_reports(module_source(variant, params), build_arch(variant, arch), nvcc_options(variant))
    entry_symbol(variant, reports)
    return reports


def module_reports(text: str, arch: str = DEFAULT_ARCH, options: tuple[str, ...] = NVCC_OPTIONS) -> dict[str, PtxasReport]:
    """ptxas's report of each entry function of a module's text (module_build)."""
    return module_build(text, arch, options).reports


def module_cubin(variant: Variant, params: Params, arch: str = DEFAULT_ARCH) -> bytes:
    """The variant's module at these parameters, compiled for the GPU's arch (a variant file's
    target replaces it): the cubin the GPU loads, from the host's cache (module_build)."""
    built = module_build(module_source(variant, params), build_arch(variant, arch), nvcc_options(variant))
    entry_symbol(variant, built.reports)
    return built.cubin.read_bytes()


@dataclass(frozen=True)
class Built:
    """A compiled module: ptxas's report of each entry function and the cubin's place in the cache."""

    reports: dict[str, PtxasReport]
    cubin: Path


def _module_key(text: str, arch: str, options: tuple[str, ...]) -> str:
    """The cache's key of a module: its text (headers inlined), the command, nvcc's version, the format."""
    key_text = "\0".join([text, *nvcc_command(arch, options), nvcc_version() or "", REPORT_FORMAT])
    return hashlib.sha256(key_text.encode()).hexdigest()[:32]


@lru_cache(maxsize=None)
def module_build(text: str, arch: str = DEFAULT_ARCH, options: tuple[str, ...] = NVCC_OPTIONS) -> Built:
    """A module's text compiled once per host: one nvcc run gives the cubin and ptxas's report, both
    kept on disk (cache_dir()/modules) under the hash of the text, the command and nvcc's version,
    shared by every process and cluster worker of the host, written whole or not at all. A second
    run, or tuning, of the same kernels compiles nothing and preprocesses nothing (PyCUDA's own cache
    runs nvcc's preprocessor on every module to find its key). Memoized within the process."""
    if nvcc_path() is None:
        raise CompileError("nvcc not found on PATH: install the CUDA toolkit")
    key = _module_key(text, arch, options)
    report, cubin = cache_dir() / "modules" / f"{key}.json", cache_dir() / "modules" / f"{key}.cubin"
    try:
        if cubin.is_file():
            return Built({name: PtxasReport(**{**fields, "warnings": tuple(fields.get("warnings", ()))})
                          for name, fields in json.loads(report.read_text()).items()}, cubin)
    except (OSError, ValueError, TypeError, AttributeError):  # not there yet, or a damaged file: compile again
        pass
    with tempfile.TemporaryDirectory(prefix="mmbench-") as tmp:
        Path(tmp, "kernel.cu").write_text(text)
        proc = subprocess.run(nvcc_command(arch, options), cwd=tmp, capture_output=True, text=True)
        log = proc.stdout + proc.stderr
        if proc.returncode != 0:
            first = next((line for line in log.splitlines() if "error" in line.lower()), log.strip()[:200])
            raise CompileError(first.strip())
        reports = parse_ptxas(log)
        made = Path(tmp, "kernel.cubin").read_bytes()
    try:  # the report first, the cubin last: a cubin on disk means both are whole
        _write_whole(report, json.dumps({name: asdict(r) for name, r in reports.items()}).encode())
        _write_whole(cubin, made)
        return Built(reports, cubin)
    except OSError:  # a read-only home: the module stands, uncached, in a file of this process's own
        fd, name = tempfile.mkstemp(prefix="mmbench-", suffix=".cubin")
        with os.fdopen(fd, "wb") as f:
            f.write(made)
        return Built(reports, Path(name))


def _write_whole(path: Path, data: bytes) -> None:
    """Write a file whole or not at all: another process or thread may be reading or writing it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp_name, path)
