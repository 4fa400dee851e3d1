"""The model in the formats other tools read and write, one module each, every one reading
only the model's plain data (``table.model()``, :func:`dynaorm.schema.model.model_of`):
``to_format(model)`` gives the document and what the format had no place for (one line
each), ``from_format(doc)`` the models a parsed document holds, checked. A format is found
by its name in the entry-point group ``dynaorm.formats`` (:mod:`dynaorm.plugins`), never
imported by name here: dynaorm's own (``json``, ``workbench``, ``mcp``,
``cloudformation``, ``terraform``) are declared there as a package of yours declares one.
:mod:`dynaorm.formats.code` prints entity code for a model (``dynaorm model --import``).
A file that cannot be read is a :class:`~dynaorm.ModelFileError` naming the place in it."""

import json as _json
from collections.abc import Mapping
from typing import Any

from dynaorm.errors import DynaormError, ModelFileError
from dynaorm.plugins import FORMATS as GROUP
from dynaorm.plugins import found, loaded

__all__ = ["FORMATS", "READABLE", "as_text", "export", "read"]


def __getattr__(name: str) -> tuple[str, ...]:
    """``FORMATS``: the names of the formats found (``dynaorm model`` writes each);
    ``READABLE``: those that read a file back too (an infrastructure format holds the
    table, not its entities). Read when first asked for."""
    if name == "FORMATS":
        return tuple(found(GROUP))
    if name == "READABLE":  # (one that cannot be loaded is left out, said: loaded())
        return tuple(n for n, format in loaded(GROUP).items() if hasattr(format, "from_format"))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _module(fmt: str) -> Any:
    """The format named ``fmt`` (what its entry point names, loaded)."""
    point = found(GROUP).get(fmt)
    if point is None:
        known = ", ".join(found(GROUP)) or "none: is dynaorm installed (its entry points)?"
        raise DynaormError(f"unknown model format {fmt!r} (known: {known})")
    return point.load()


def export(model: Mapping[str, Any], fmt: str) -> tuple[Any, list[str]]:
    """``model`` (a table's, :func:`~dynaorm.schema.model.model_of`) in format ``fmt`` (a
    JSON document, or Terraform's text), and what the format had no place for (one line
    each)."""
    doc, notes = _module(fmt).to_format(model)
    return doc, notes


def as_text(model: Mapping[str, Any], fmt: str) -> tuple[str, list[str]]:
    """:func:`export`'s document as the text of a file: the format's own
    ``text_of(doc)`` where it has one (CloudFormation's), a text document as it is, else
    indented JSON; and what the format had no place for."""
    module = _module(fmt)
    doc, notes = module.to_format(model)
    if hasattr(module, "text_of"):
        return str(module.text_of(doc)), notes
    return doc if isinstance(doc, str) else _json.dumps(doc, indent=2) + "\n", notes


def read(text: str, fmt: str = "json") -> list[dict[str, Any]]:
    """The models (one per table) a file of format ``fmt`` describes, checked; each
    entity carries ``"_place"``, where it is in the file. Anything it cannot read is a
    :class:`~dynaorm.ModelFileError` naming the place (a file nested too deep: ``$``)."""
    module = _module(fmt)
    if not hasattr(module, "from_format"):
        readable = ", ".join(__getattr__("READABLE"))
        raise DynaormError(f"{fmt} is not read back: a {fmt} file holds the table, not its "
                           f"entities (readable: {readable})")
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
