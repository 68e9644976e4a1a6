"""mmbench: a benchmarking harness for GPU matrix kernels. From Python: mmbench.run(...) returns a
run's rows as a pandas DataFrame, mmbench.plan(...) its points, mmbench.tune(...) a tuning's rows
and the best configurations it recorded (docs/api.md)."""

from .version import __version__

__all__ = ["run", "plan", "tune", "RunRefused", "RunAborted", "RunInterrupted", "__version__"]
_FROM = {"run": "api", "plan": "api", "tune": "api", "RunRefused": "engine.refusals", "RunAborted": "engine.refusals",
         "RunInterrupted": "engine.refusals"}


def __getattr__(name: str):
    """The API on first use (PEP 562), so that a process importing one of mmbench's modules (a GPU
    worker, a Dask worker) does not import the whole API with it: pandas, the studies, tuning. A
    submodule (mmbench.variants, ...) is imported when first named, as the eager import used to."""
    from importlib import import_module

    if name in _FROM:
        value = getattr(import_module(f".{_FROM[name]}", __name__), name)
    else:
        try:
            value = import_module(f".{name}", __name__)
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module 'mmbench' has no attribute {name!r}") from None
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_FROM))
