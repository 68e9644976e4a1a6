"""mmbench's version (pyproject.toml's), apart from the package's __init__ so that a module may
record it without importing the API that __init__ exports."""

__version__ = "0.1.0"
