"""mmbench: a benchmarking harness for GPU matrix kernels. From Python: mmbench.run(...) returns a
run's rows as a pandas DataFrame, mmbench.plan(...) its points, mmbench.tune(...) a tuning's rows
and the best configurations it recorded (docs/api.md)."""

from .api import plan, run, tune
from .engine.refusals import RunAborted, RunInterrupted, RunRefused
from .version import __version__

__all__ = ["run", "plan", "tune", "RunRefused", "RunAborted", "RunInterrupted", "__version__"]
