"""Key templates: ``"ORG#{org_id}#USER#{user_id}"`` rendered from an entity's fields.

A template is parsed once (at class definition) into literal and field segments. It can
render a full key, render the prefix made of its leading fields (for ``begins_with`` and
range queries), and parse a rendered key back into its field strings.
"""

from __future__ import annotations

import enum
import functools
import re
import string
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from .errors import KeyTemplateError

__all__ = ["SHARD_FIELD", "KeyTemplate", "render_value"]

#: The pseudo-field that write sharding fills in (never an entity field).
SHARD_FIELD = "shard"
_CONVERSIONS = {"u": str.upper, "l": str.lower}
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def render_value(value: Any, spec: str = "") -> str:
    """Render one value the way keys need it (see the contract's typing rules)."""
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, datetime):
        moment: datetime = value.astimezone(UTC) if value.tzinfo is not None else value
        if spec:
            return format(moment, spec)
        return moment.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"
    if spec:
        return str(format(value, spec))
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, date):
        return value.isoformat()
    return str(value)


@dataclass(frozen=True, slots=True)
class _Field:
    name: str
    spec: str
    conversion: str | None


@dataclass(frozen=True)
class KeyTemplate:
    """A parsed key template. Build with :meth:`parse`."""

    source: str
    segments: tuple[str | _Field, ...]

    @classmethod
    def parse(cls, source: str, *, owner: str = "?") -> KeyTemplate:
        if not isinstance(source, str) or not source:
            raise KeyTemplateError(f"{owner}: a key template must be a non-empty string, "
                                   f"got {source!r}")
        segments: list[str | _Field] = []
        try:
            parsed = list(string.Formatter().parse(source))
        except ValueError as exc:
            raise KeyTemplateError(f"{owner}: malformed key template {source!r}: {exc}") from exc
        for literal, name, spec, conversion in parsed:
            if literal:
                segments.append(literal)
            if name is None:
                continue
            if not _IDENT.match(name):
                raise KeyTemplateError(
                    f"{owner}: template {source!r} field {{{name}}} must be a plain field name")
            if conversion is not None and conversion not in _CONVERSIONS:
                raise KeyTemplateError(
                    f"{owner}: template {source!r} uses conversion !{conversion}; "
                    "only !u (upper) and !l (lower) are supported")
            if segments and isinstance(segments[-1], _Field):
                raise KeyTemplateError(
                    f"{owner}: template {source!r} puts two fields side by side; "
                    "separate them with a literal such as '#'")
            segments.append(_Field(name, spec or "", conversion))
        return cls(source, tuple(segments))

    # -- introspection -------------------------------------------------------------
    @functools.cached_property
    def fields(self) -> tuple[str, ...]:
        """Field names in template order (``shard`` included when present)."""
        return tuple(s.name for s in self.segments if isinstance(s, _Field))

    @property
    def is_literal(self) -> bool:
        return not self.fields

    # -- rendering -----------------------------------------------------------------
    def _render_field(self, seg: _Field, values: Mapping[str, Any], owner: str,
                      *, check: bool = True) -> str:
        try:
            value = values[seg.name]
        except KeyError:
            raise KeyTemplateError(
                f"{owner}: key template {self.source!r} needs field {seg.name!r}") from None
        if value is None:
            raise KeyTemplateError(
                f"{owner}: field {seg.name!r} is None and cannot go into key {self.source!r}")
        try:
            text = render_value(value, seg.spec)
        except (ValueError, TypeError) as exc:
            raise KeyTemplateError(
                f"{owner}: field {seg.name!r} value {value!r} does not fit format "
                f"{seg.spec!r} of key {self.source!r}: {exc}") from exc
        if seg.conversion:
            text = _CONVERSIONS[seg.conversion](text)
        if check and (not text or "#" in text):
            why = "is empty" if not text else "contains '#'"
            raise KeyTemplateError(
                f"{owner}: field {seg.name!r} value {value!r} {why}; "
                f"it cannot go into key {self.source!r}")
        return text

    def render(self, values: Mapping[str, Any], owner: str = "?") -> str:
        """Render the full key from ``values`` (a mapping of field name to value)."""
        out = []
        for seg in self.segments:
            out.append(seg if isinstance(seg, str) else self._render_field(seg, values, owner))
        return "".join(out)

    def render_prefix(self, values: Mapping[str, Any], owner: str = "?",
                      *, partial: str | None = None) -> str:
        """Render the leading part of the key covered by ``values``.

        Fields are consumed in template order while present in ``values``; the literal
        that follows the last complete field is included (so ``"amsg#"`` never matches
        ``"amsgx#"``). ``partial`` names a field whose value is a prefix of a full value
        (``date="2018-08"``): rendering stops right after it.
        """
        out: list[str] = []
        for seg in self.segments:
            if isinstance(seg, str):
                out.append(seg)
                continue
            if seg.name not in values:
                break
            if seg.name == partial:
                value = values[seg.name]
                if isinstance(value, str) and seg.spec:  # a prefix of the rendered text
                    out.append(_CONVERSIONS[seg.conversion](value) if seg.conversion else value)
                else:
                    out.append(self._render_field(seg, values, owner, check=False))
                return "".join(out)
            out.append(self._render_field(seg, values, owner))
        return "".join(out)

    def leading_fields(self, names: set[str] | frozenset[str]) -> tuple[str, ...]:
        """The longest run of template fields, from the start, that ``names`` covers."""
        run = []
        for name in self.fields:
            if name not in names:
                break
            run.append(name)
        return tuple(run)

    # -- parsing back --------------------------------------------------------------
    def parse_key(self, key: str) -> dict[str, str] | None:
        """Split a rendered key back into field strings; ``None`` if it does not match."""
        pattern = "".join(
            re.escape(s) if isinstance(s, str) else f"(?P<{s.name}>[^#]+)" for s in self.segments
        )
        m = re.fullmatch(pattern, key)
        return None if m is None else m.groupdict()

    def __str__(self) -> str:
        return self.source
