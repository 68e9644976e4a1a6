"""The GPU CI workflow installs every extra whose code `pytest -m gpu` covers (the kernel clock's and
the cluster's tests were skipped there for want of cupti-python and dask-cuda), and its smoke run
writes into the git-ignored runs folder, never into the tree."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from mmbench.toml_files import tomllib  # tomli before Python 3.11, as mmbench reads its configs

REPO = Path(__file__).resolve().parent.parent
WORKFLOW = REPO / ".github" / "workflows" / "gpu-smoke.yml"
# The distribution that gives each module a GPU test (or the conftest every test loads) imports or
# skips without; a module missing here fails the test below, so a new one cannot slip past it.
PROVIDERS = {"pycuda": "pycuda", "pynvml": "nvidia-ml-py", "cupy": "cupy-cuda13x", "cupti": "cupti-python",
             "dask": "dask", "distributed": "distributed", "dask_cuda": "dask-cuda", "pytest": "pytest",
             "hypothesis": "hypothesis"}


def _installed_extras() -> set[str]:
    (extras,) = re.findall(r"pip install [\"']?\.\[([^\]]*)\]", WORKFLOW.read_text())
    return {e.strip() for e in extras.split(",")}


def _extras() -> dict[str, set[str]]:
    """pyproject's extras: name -> the distributions it installs."""
    with open(REPO / "pyproject.toml", "rb") as f:
        extras = tomllib.load(f)["project"]["optional-dependencies"]
    return {name: {re.split(r"[<>=!~\[; ]", req, maxsplit=1)[0].lower() for req in reqs}
            for name, reqs in extras.items()}


def _is_gpu_marked(node) -> bool:
    return any("mark.gpu" in ast.unparse(d) for d in getattr(node, "decorator_list", []))


def _needs(tree: ast.Module, everywhere: bool) -> tuple[set[str], set[str]]:
    """(modules skipped without, modules imported) by the GPU tests of a test module: all of it
    when the module is marked gpu, else its gpu-marked tests."""
    scopes = [tree] if everywhere else [n for n in ast.walk(tree) if _is_gpu_marked(n)]
    skipped, imported = set(), set()
    for node in (n for scope in scopes for n in ast.walk(scope)):
        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith(("importorskip", "find_spec")):
            skipped.add(node.args[0].value.split(".")[0])
        elif isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            imported.add(node.module.split(".")[0])
    return skipped, imported


def _modules_the_gpu_tests_need() -> set[str]:
    skipped, imported = _needs(ast.parse((REPO / "tests" / "conftest.py").read_text()), everywhere=True)
    for path in sorted((REPO / "tests").glob("test_*.py")):
        tree = ast.parse(path.read_text())
        marked = any(isinstance(n, ast.Assign) and "pytestmark" in ast.unparse(n.targets[0])
                     and "gpu" in ast.unparse(n.value) for n in tree.body)
        s, i = _needs(tree, everywhere=marked)
        skipped, imported = skipped | s, imported | i
    unknown = skipped - set(PROVIDERS)
    assert not unknown, f"GPU tests skip without {sorted(unknown)}: say in PROVIDERS which distribution gives each"
    return skipped | (imported & set(PROVIDERS))


def test_the_gpu_workflow_installs_every_extra_its_tests_need():
    extras, installed = _extras(), _installed_extras()
    assert installed <= set(extras), f"the workflow installs extras pyproject lacks: {sorted(installed - set(extras))}"
    given = set().union(*(extras[e] for e in installed))
    needed = _modules_the_gpu_tests_need()
    assert {"pycuda", "cupti", "dask_cuda"} <= needed  # what the scan must find: the conftest's and two importorskips
    missing = {m: [e for e, dists in extras.items() if PROVIDERS[m] in dists]
               for m in needed if PROVIDERS[m] not in given}
    assert not missing, f"GPU tests need {missing} (module: extras giving it); the workflow installs {sorted(installed)}"


def test_the_gpu_workflows_smoke_run_writes_into_the_runs_folder():
    steps = re.findall(r"^\s*(?:- )?(?:run|path): (.*)$", WORKFLOW.read_text(), re.MULTILINE)
    outputs = [o for step in steps for o in re.findall(r"(?:--output|-o) (\S+)", step)]
    assert outputs and all(o.startswith("runs/") for o in outputs), outputs
    assert not [step for step in steps if "results/" in step]  # the tree's reference runs stay as committed
    assert "path: runs/ci-smoke/" in WORKFLOW.read_text()  # the artifact is the smoke run's folder
