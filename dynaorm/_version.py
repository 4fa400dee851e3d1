"""The version of dynaorm: the one place it is written (``pyproject.toml`` reads it, and
``dynaorm.__version__`` re-exports it)."""

__version__ = "0.10.0"
