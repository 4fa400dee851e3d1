"""A Griffe extension for the API reference (``mkdocs.yml``): a class made by
:func:`dynaorm.records.record` is documented as the dataclass it is.

Griffe reads the source without importing it and recognises only ``@dataclass`` itself:
without this extension a record has no ``__init__`` in the reference, so its heading loses
its signature (``GSI(name, pk, sk=None, projection='ALL')``) and its ``dataclass`` label.
This gives a record the ``__init__`` Griffe's own dataclass extension gives a dataclass:
one parameter an annotated attribute, a ``field(init=False)`` left out, a
``default_factory`` shown as its call (records take no ``kw_only`` field nor ``InitVar``).
"""

from __future__ import annotations

from typing import Any

import griffe

RECORD = "dynaorm.records.record"
FIELD = "dataclasses.field"


def _is_record(cls: griffe.Class) -> bool:
    return any(isinstance(d.value, griffe.Expr) and d.value.canonical_path == RECORD
               for d in cls.decorators)


def _field_arguments(attribute: griffe.Attribute) -> dict[str, Any]:
    value = attribute.value
    if isinstance(value, griffe.ExprAttribute):
        value = value.last
    if isinstance(value, griffe.ExprCall) and value.canonical_path == FIELD:
        return {a.name: a.value for a in value.arguments if isinstance(a, griffe.ExprKeyword)}
    return {}


def _parameters(cls: griffe.Class) -> list[griffe.Parameter]:
    parameters = []
    for member in cls.members.values():
        if not isinstance(member, griffe.Attribute) or member.annotation is None:
            continue
        if "property" in member.labels or ("class-attribute" in member.labels
                                           and "instance-attribute" not in member.labels):
            continue
        arguments = _field_arguments(member)
        if arguments.get("init") == "False":
            continue
        default: Any
        if "default_factory" in arguments:
            default = griffe.ExprCall(function=arguments["default_factory"], arguments=[])
        else:
            default = arguments.get("default", None if arguments else member.value)
        parameters.append(griffe.Parameter(
            member.name, annotation=member.annotation,
            kind=griffe.ParameterKind.positional_or_keyword, default=default,
            docstring=member.docstring))
    return parameters


def _document(node: griffe.Module | griffe.Class, seen: set[str]) -> None:
    if node.canonical_path in seen:
        return
    seen.add(node.canonical_path)
    if isinstance(node, griffe.Class) and "__init__" not in node.members:
        try:  # (a subclass of a record is a dataclass too, as dataclasses.is_dataclass says)
            if any(_is_record(parent) for parent in node.mro()):
                node.labels.add("dataclass")
        except ValueError:  # (an MRO Griffe cannot work out)
            pass
    if isinstance(node, griffe.Class) and _is_record(node):
        node.labels.add("dataclass")
        if "__init__" not in node.members:
            node.set_member("__init__", griffe.Function(
                "__init__", lineno=0, endlineno=0, parent=node, returns="None",
                parameters=griffe.Parameters(
                    griffe.Parameter("self", kind=griffe.ParameterKind.positional_or_keyword),
                    *_parameters(node))))
    for member in node.members.values():
        if isinstance(member, griffe.Module | griffe.Class):
            _document(member, seen)


class RecordsExtension(griffe.Extension):
    """Records documented as dataclasses (see the module)."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        _document(pkg, set())
