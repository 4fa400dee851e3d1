"""Stored formats of times (contract 24): :class:`StoredAs`, a field-level kind
(:class:`~dynaorm.values.codec.Kind`) that says in which text or number a ``datetime``
field is stored, used for every value dynaorm writes there and parsed on read::

    from typing import Annotated
    from dynaorm import StoredAs

    class Contact(Entity):
        created: Annotated[datetime, StoredAs("%Y-%m-%dT%H:%M:%SZ")]   # a strftime pattern
        seen: Annotated[datetime, StoredAs.ISO_Z]            # 2026-11-27T09:30:56.761229Z
        opened: Annotated[datetime, StoredAs.ISO_Z_MILLIS]   # 2026-11-27T09:30:56.761Z
        expires: Annotated[datetime, StoredAs.EPOCH_SECONDS] # 1795772456 (a number)
        clicked: Annotated[datetime, StoredAs.EPOCH_MILLIS]  # 1795772456761 (a number)

A time without a zone (a naive datetime, or a pattern without ``%z``) is taken in the
format's zone, UTC unless ``zone=`` says otherwise; an aware one is written in that zone.
A value the format cannot parse on read is validated as pydantic would without it (an
ISO-8601 text, a number of epoch seconds), so items other writers stored in the default
form still read. Key templates render a time their own way: a format is its field's
attribute's, not its keys'.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from decimal import ROUND_FLOOR, Decimal
from typing import Any, ClassVar

from pydantic_core import core_schema

from dynaorm._types import AttributeValue
from dynaorm.errors import DynaormError, InvalidValueError
from dynaorm.values.codec import Kind

_NAMED = ("iso-z", "iso-z-millis", "epoch-seconds", "epoch-millis", "number")


@dataclass(frozen=True, eq=False, init=False)
class StoredAs(Kind):
    """The stored format of a ``datetime`` field, given in its ``Annotated`` metadata:
    a ``strftime`` pattern (``StoredAs("%Y-%m-%dT%H:%M:%SZ")``) or one of the named
    formats, :attr:`ISO_Z`, :attr:`ISO_Z_MILLIS`, :attr:`EPOCH_SECONDS`,
    :attr:`EPOCH_MILLIS`. See :mod:`dynaorm.values.formats`."""

    format: str = ""
    """The pattern, or the name of a named format (``"iso-z"``, ``"epoch-seconds"``...)."""
    zone: tzinfo = UTC
    """The zone a time without one is taken in, and aware times are written in."""

    ISO_Z: ClassVar[StoredAs]
    """ISO-8601 in UTC ending in ``Z``, microseconds when the time has any."""
    ISO_Z_MILLIS: ClassVar[StoredAs]
    """ISO-8601 in UTC ending in ``Z`` with milliseconds (JavaScript's ``toISOString()``)."""
    EPOCH_SECONDS: ClassVar[StoredAs]
    """Seconds since the epoch, a number (a fraction when the time has microseconds)."""
    EPOCH_MILLIS: ClassVar[StoredAs]
    """Milliseconds since the epoch, a whole number."""
    NUMBER: ClassVar[StoredAs]
    """A ``bool`` field's format: the number 1 or 0 (as other writers store booleans)."""

    def __init__(self, format: str, *, zone: tzinfo = UTC):
        if format not in _NAMED and "%" not in format:
            raise DynaormError(f"StoredAs({format!r}): give a strftime pattern (with % "
                               "directives) or one of StoredAs.ISO_Z, ISO_Z_MILLIS, "
                               "EPOCH_SECONDS, EPOCH_MILLIS (or NUMBER, a bool's)")
        values = {"name": f"stored as {format}", "python": (bool if format == "number"
                                                             else datetime,),
                  "tag": "N" if format in _NAMED[2:] else "S",  # (epochs, a bool's number)
                  "encode": self._encoder(format, zone), "format": format, "zone": zone,
                  "schemas": frozenset(), "actions": {}, "zero": None, "annotations": (),
                  "pynamodb": ()}
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def __repr__(self) -> str:
        if self.format in _NAMED and self.zone is UTC:
            return f"StoredAs.{self.format.upper().replace('-', '_')}"
        zone = "" if self.zone is UTC else f", zone={self.zone!r}"
        return f"StoredAs({self.format!r}{zone})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StoredAs) and (self.format, self.zone) == (
            other.format, other.zone)

    def __hash__(self) -> int:
        return hash((self.format, self.zone))

    # -- writing --------------------------------------------------------------------------
    @staticmethod
    def _encoder(format: str, zone: tzinfo) -> Callable[[Any], AttributeValue]:
        def encode(value: Any) -> AttributeValue:
            if format == "number" and isinstance(value, bool):
                return {"N": str(int(value))}
            if format == "number" or not isinstance(value, datetime):
                raise InvalidValueError(f"a value stored as {format!r} must be a "
                                        f"{'bool' if format == 'number' else 'datetime'}, "
                                        f"not {type(value).__name__}")
            value = value.replace(tzinfo=zone) if value.tzinfo is None else (
                value.astimezone(zone))
            if format == "epoch-seconds":
                seconds = Decimal(int(value.timestamp())) if not value.microsecond else (
                    _exact_seconds(value))
                return {"N": str(seconds)}
            if format == "epoch-millis":
                return {"N": str(int((_exact_seconds(value) * 1000).to_integral_value(
                    ROUND_FLOOR)))}
            if format in ("iso-z", "iso-z-millis"):  # (isoformat: a year of four digits)
                text = value.astimezone(UTC).replace(tzinfo=None, microsecond=0).isoformat()
                if format == "iso-z-millis":
                    return {"S": f"{text}.{value.microsecond // 1000:03d}Z"}
                return {"S": f"{text}.{value.microsecond:06d}Z" if value.microsecond
                        else f"{text}Z"}
            if value.year < 1000:  # (strftime's %Y leaves a year unpadded on glibc: 999,
                # which strptime and ISO readers refuse)
                return {"S": value.strftime(_PADDED.sub(
                    lambda m: m.group() if m.group() == "%%" else f"{value.year:04d}",
                    format))}
            return {"S": value.strftime(format)}
        return encode

    # -- reading --------------------------------------------------------------------------
    def parse(self, raw: Any) -> Any:
        """A stored value as a datetime in this format (anything else as it is: pydantic
        then validates it its own way)."""
        fmt = self.format
        if fmt in ("epoch-seconds", "epoch-millis"):
            if isinstance(raw, (int, Decimal, float)) and not isinstance(raw, bool):
                # (microseconds from the epoch, rounded: a fraction before 1970 is negative,
                # a finer one may carry into the next second)
                micros = (Decimal(raw) * (1000 if fmt == "epoch-millis" else 1_000_000)
                          ).to_integral_value()
                try:
                    return (_EPOCH + timedelta(microseconds=int(micros))).astimezone(self.zone)
                except OverflowError:
                    raise ValueError(f"{raw} epoch {fmt[6:]} is no time a datetime holds"
                                     ) from None
            return raw
        if not isinstance(raw, str):
            return raw
        if fmt in ("iso-z", "iso-z-millis"):
            return raw  # (ISO-8601: pydantic's own)
        try:
            found = datetime.strptime(raw, fmt)
        except ValueError:
            return raw
        return found.replace(tzinfo=self.zone) if found.tzinfo is None else found

    def __get_pydantic_core_schema__(self, source: Any, handler: Any
                                     ) -> core_schema.CoreSchema:
        """pydantic's schema of a field of this format: the stored form parsed, then the
        field's own validation."""
        return core_schema.no_info_before_validator_function(self.parse, handler(source))


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: a pattern's ``%Y`` (or ``%%``, left as it is)
_PADDED = re.compile(r"%%|%Y")


def _exact_seconds(value: datetime) -> Decimal:
    """The epoch seconds of an aware datetime, exactly (microseconds as a fraction)."""
    delta = value - _EPOCH
    return (Decimal(delta.days * 86400 + delta.seconds)
            + Decimal(delta.microseconds) / 1_000_000)


for _name in _NAMED:  # (StoredAs.ISO_Z is StoredAs("iso-z")...)
    setattr(StoredAs, _name.upper().replace("-", "_"), StoredAs(_name))
