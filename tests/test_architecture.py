"""The house rules of the code, checked: no import cycles among mmbench's modules (lazy imports
count), no import upward through the layers (LAYERS), no `hasattr` standing in for an interface, no
function over 60 lines, and CLI commands that parse, call one function and print (none over 40
lines, none reaching into another module's private functions). ALLOWED lists what still breaks a
rule, to be emptied, never grown."""

from __future__ import annotations

import ast
from pathlib import Path


PACKAGE = Path(__file__).resolve().parent.parent / "mmbench"
LONGEST_FUNCTION = 60
LONGEST_COMMAND = 40
# (module path, function) still over its limit; remove an entry when its function is split.
ALLOWED: set[tuple[str, str]] = set()
ALLOWED_COMMANDS: set[tuple[str, str]] = set()
# The layers, lowest first, each a list of modules and packages (a package holds its modules but
# those placed elsewhere by a longer name): a module imports from its own layer and those below.
# The shared vocabulary sits at the bottom so that nothing imports upward for it.
LAYERS = (
    ("vocabulary", ["version", "places", "precisions", "sizes", "timing", "kernel_clock", "launch_ex", "draws",
                    "schema", "results", "vocabulary", "papers", "toml_files", "variants"]),
    ("device, sources, operations", ["source", "device", "ops", "cublas", "cublaslt", "naive_cpu", "kernel_text",
                                     "environment", "blas_threads", "variants.files", "checking", "ceilings",
                                     "analysis", "summary",
                                     "profiler_target"]),
    ("engine", ["engine", "profile", "verify_timing"]),
    ("tuning", ["tuning"]),
    ("requests", ["", "sweep", "api", "config"]),  # "": the package itself (mmbench/__init__.py)
    ("studies and figures", ["studies", "plots", "hierarchy", "generic_figures", "compare"]),
    ("command line", ["cli", "__main__"]),
)
# (importer, imported) still pointing upward; remove an entry when the import is gone.
ALLOWED_UPWARD: set[tuple[str, str]] = set()


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ("mmbench",) + path.relative_to(PACKAGE).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The mmbench modules a module imports, at its top or inside functions."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            targets = [f"{target}.{a.name}" if f"{target}.{a.name}" in modules else target for a in node.names]
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            continue
        for target in targets:
            while target not in modules and "." in target:
                target = target.rsplit(".", 1)[0]
            if target in modules and target != name:
                found.add(target)
    return found


def _layer(module: str) -> int | None:
    """The layer of a module: that of the longest name in LAYERS that is it or holds it."""
    name = module.removeprefix("mmbench").removeprefix(".")
    found = [(len(entry), i) for i, (_, entries) in enumerate(LAYERS) for entry in entries
             if name == entry or (entry and name.startswith(entry + "."))]
    return max(found)[1] if found else None


def _upward(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    return {(a, b) for a, targets in graph.items() for b in targets if _layer(b) > _layer(a)}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def _functions():
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield str(path.relative_to(PACKAGE)), node


def _is_command(node: ast.FunctionDef) -> bool:
    for deco in node.decorator_list:
        call = deco.func if isinstance(deco, ast.Call) else deco
        name = call.attr if isinstance(call, ast.Attribute) else getattr(call, "id", "")
        if name in ("command", "group"):
            return True
    return False


def test_no_import_cycles():
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    assert _cycles(graph) == []


def test_every_module_has_a_layer():
    assert [name for name in _modules() if _layer(name) is None] == []


def test_no_module_imports_upward():
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    upward = _upward(graph)
    assert upward <= ALLOWED_UPWARD, sorted(upward - ALLOWED_UPWARD)
    assert not ALLOWED_UPWARD - upward, f"gone since, remove from ALLOWED_UPWARD: {ALLOWED_UPWARD - upward}"


def test_the_layers_tell_upward_from_down():
    assert _layer("mmbench.variants.files") == 1 and _layer("mmbench.variants.model") == 0  # the longer name wins
    assert _upward({"mmbench.schema": {"mmbench.engine.plan", "mmbench.sizes"}, "mmbench.cli.tune": {"mmbench.tuning"}}) \
        == {("mmbench.schema", "mmbench.engine.plan")}


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_hasattr_stands_in_for_an_interface():
    found = [f"{path}:{node.lineno}" for path, tree in ((p, ast.parse(p.read_text(encoding="utf-8")))
                                                      for p in PACKAGE.rglob("*.py"))
             for node in ast.walk(tree)
             if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "hasattr"]
    assert found == []


def test_no_function_is_over_60_lines():
    long = {(path, node.name): node.end_lineno - node.lineno + 1 for path, node in _functions()
            if node.end_lineno - node.lineno + 1 > LONGEST_FUNCTION}
    assert set(long) <= ALLOWED, {k: v for k, v in long.items() if k not in ALLOWED}
    assert not ALLOWED - set(long), f"split since, remove from ALLOWED: {ALLOWED - set(long)}"


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _private_uses(path: Path) -> set[str]:
    """The underscore names of other mmbench modules a module takes: `from .x import _f`, or `x._f`
    where x is a name it imported from mmbench (`from . import x`)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found, imported = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("mmbench")):
            for alias in node.names:
                if _private(alias.name):
                    found.add(f"{node.module or ''}.{alias.name}".lstrip("."))
                imported.add(alias.asname or alias.name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in imported \
                and _private(node.attr):
            found.add(f"{node.value.id}.{node.attr}")
    return found


def test_cli_modules_call_no_private_function_of_another_module():
    used = {name: _private_uses(path) for name, path in _modules().items() if name.startswith("mmbench.cli")}
    assert {name: found for name, found in used.items() if found} == {}


def test_the_private_use_finder_finds_one(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("from .running import _execute, say\nfrom . import running\nrunning._report(say)\n")
    assert _private_uses(module) == {"running._execute", "running._report"}


def test_cli_commands_parse_call_and_print():
    long = {(path, node.name): node.end_lineno - node.lineno + 1 for path, node in _functions()
            if path.startswith("cli/") and _is_command(node) and node.end_lineno - node.lineno + 1 > LONGEST_COMMAND}
    assert set(long) <= ALLOWED_COMMANDS, {k: v for k, v in long.items() if k not in ALLOWED_COMMANDS}
    assert not ALLOWED_COMMANDS - set(long), f"short since, remove from ALLOWED_COMMANDS: {ALLOWED_COMMANDS - set(long)}"
