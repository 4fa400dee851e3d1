"""The model in the formats other tools read and write, one module each, every one reading
only the model's plain data (``table.model()``, :func:`dynaorm.schema.model.model_of`):
``to_format(model)`` gives the document and what the format had no place for (one line
each), ``from_format(doc)`` the models a parsed document holds, checked.
:mod:`dynaorm.formats.code` prints entity code for a model (``dynaorm model --import``).
A file that cannot be read is a :class:`~dynaorm.ModelFileError` naming the place in it."""

from __future__ import annotations

import importlib
import json as _json
from collections.abc import Mapping
from typing import Any, Final

from dynaorm.errors import DynaormError, ModelFileError

__all__ = ["FORMATS", "READABLE", "export", "read"]

#: the formats ``dynaorm model`` writes (each a module of this package); the first three
#: it reads back too (:data:`READABLE`): an infrastructure format holds the table, not its
#: entities
FORMATS: Final = ("json", "workbench", "mcp", "cloudformation", "terraform")
READABLE: Final = ("json", "workbench", "mcp")


def _module(fmt: str) -> Any:
    if fmt not in FORMATS:
        raise DynaormError(f"unknown model format {fmt!r} (known: {', '.join(FORMATS)})")
    return importlib.import_module(f"{__name__}.{fmt}")


def export(model: Mapping[str, Any], fmt: str) -> tuple[Any, list[str]]:
    """``model`` (a table's, :func:`~dynaorm.schema.model.model_of`) in format ``fmt`` (a
    JSON document, or Terraform's text), and what the format had no place for (one line
    each)."""
    doc, notes = _module(fmt).to_format(model)
    return doc, notes


def read(text: str, fmt: str = "json") -> list[dict[str, Any]]:
    """The models (one per table) a file of format ``fmt`` describes, checked; each
    entity carries ``"_place"``, where it is in the file. Anything it cannot read is a
    :class:`~dynaorm.ModelFileError` naming the place (a file nested too deep: ``$``)."""
    if fmt not in READABLE:
        raise DynaormError(f"{fmt} is not read back: a {fmt} file holds the table, not its "
                           f"entities (readable: {', '.join(READABLE)})")
    module = _module(fmt)
    try:
        doc = _json.loads(text)
    except _json.JSONDecodeError as exc:
        raise ModelFileError(f"not JSON: {exc.msg}",
                             place=f"line {exc.lineno}, column {exc.colno}") from None
    except (ValueError, RecursionError) as exc:  # (a number too long, nesting too deep)
        raise ModelFileError(f"not JSON dynaorm reads: {str(exc)[:80]}", place="$") from None
    try:
        models: list[dict[str, Any]] = module.from_format(doc)
    except RecursionError:
        raise ModelFileError("nested too deep to be a model", place="$") from None
    return models
