"""mmbench: a benchmarking harness for GPU matrix kernels."""

__version__ = "0.1.0"
