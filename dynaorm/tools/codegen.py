"""Entity code from a model (moved to :mod:`dynaorm.formats.code`), under the names 0.6
gave it."""

from __future__ import annotations

from dynaorm.formats.code import code_of, identifier

__all__ = ["code_of", "identifier"]
