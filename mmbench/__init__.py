"""mmbench: a benchmarking harness for GPU matrix kernels. From Python: mmbench.run(...) returns a
run's rows as a pandas DataFrame, mmbench.plan(...) its points, mmbench.tune(...) a tuning's rows
and the best configurations it recorded (docs/api.md)."""

from .version import __version__

__all__ = ["run", "plan", "tune", "RunRefused", "RunAborted", "RunInterrupted", "__version__"]
_FROM = {"run": "api", "plan": "api", "tune": "api", "RunRefused": "engine.refusals", "RunAborted": "engine.refusals",
         "RunInterrupted": "engine.refusals"}


def __getattr__(name: str):
    """The API on first use (PEP 562), so that a process importing one of mmbench's modules (a GPU
    worker, a Dask worker) does not import the whole API with it: pandas, the studies, tuning."""
    if name not in _FROM:
        raise AttributeError(f"module 'mmbench' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{_FROM[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_FROM))
