"""DynamoDB's size and value rules, on rendered AttributeValues (pure): the one place
they live.

Every limit here was measured against DynamoDB Local (the reference engine) and sits
exactly at its boundary: a value just inside is stored and reads back equal, a value just
outside is refused by DynamoDB, so dynaorm refuses it first with a typed error that names
the entity, the field and the key.

- Sizes: :func:`value_size` (a value), :func:`item_size` (an item: names plus values),
  :func:`number_size` (a number), :func:`text_size` (a string or an attribute name), and
  :func:`updated_item` (the item an update makes of a stored item dynaorm knows).
- Key attributes (table and index keys): at most 2048 bytes for a partition key and 1024
  for a sort key, never empty (:func:`check_key_value`, :class:`~dynaorm.KeyTemplateError`).
- Strings must be valid UTF-8: a lone surrogate (``json.loads('"\\ud800"')``) cannot be
  (:class:`~dynaorm.InvalidValueError`), in attribute values, map keys and sets alike.
- Maps and lists nest at most :data:`MAX_NESTING` levels (DynamoDB refuses a map or list
  at level 32 and any value at level 33): :func:`value_problem`.
- Numbers: at most 38 significant digits, magnitude ``1E-130 <= |n| < 1E+126`` or zero
  (:func:`number_problem`).
- Attribute names (item attributes and map keys) are never empty.
- Items: at most 400 KB (:func:`check_size`).

All walks are iterative: no input, however deep, raises ``RecursionError`` here.
"""

import math
from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence, Sized
from decimal import Context, Decimal, InvalidOperation
from typing import Any, Final

from dynaorm._types import AttributeValue, Item, PlainKey
from dynaorm.errors import InvalidValueError, ItemTooLargeError, KeyTemplateError
from dynaorm.values.keys import wire_key
from dynaorm.values.records import Clause, Member

#: Bytes of a partition key value (table or index), at most.
MAX_PARTITION_KEY_BYTES: Final = 2048
#: Bytes of a sort key value (table or index; guard keys too), at most.
MAX_SORT_KEY_BYTES: Final = 1024
#: Maps or lists inside one attribute value, nested, at most (a 32nd level is refused).
MAX_NESTING: Final = 31
#: Significant digits of a number, at most.
MAX_DIGITS: Final = 38
#: Bytes of an item, at most.
MAX_ITEM_BYTES: Final = 400 * 1024
_EXACT: Final = Context(prec=400, Emax=999_999, Emin=-999_999)
_LOW: Final = Decimal("1E-130")
_HIGH: Final = Decimal("1E+126")


# -- sizes ------------------------------------------------------------------------------------
def _parse_number(text: Any) -> Decimal | None:
    if not isinstance(text, str) or not text or text.strip() != text:
        return None
    try:
        number = Decimal(text)
    except (InvalidOperation, ValueError):
        return None
    return number if number.is_finite() else None


def text_size(text: str) -> int:
    """DynamoDB's size of a string (a value or an attribute name): its UTF-8 bytes."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def number_size(text: str) -> int:
    """DynamoDB's size of a number: one byte per pair of digits (pairs aligned on the
    decimal point, leading and trailing zero pairs dropped), one more, one for a sign; a
    zero (``0``, ``-0``, ``0.0``, ``0E+5``) is 1 byte (measured on DynamoDB Local)."""
    number = _parse_number(text)
    if number is None or number.is_zero():
        return 1 if number is not None else len(text)
    sign, digits, exponent = number.normalize(_EXACT).as_tuple()
    assert isinstance(exponent, int)
    top = exponent + len(digits) - 1
    return top // 2 - exponent // 2 + 2 + sign


def value_size(av: AttributeValue) -> int:
    """DynamoDB's size of one AttributeValue in bytes (iterative; measured on DynamoDB
    Local: strings and binaries their length, numbers :func:`number_size`, booleans and
    nulls 1, sets the sum of their members, maps and lists 3 plus 1 per member plus
    their members, and a map its key names)."""
    total = 0
    stack = [av]
    while stack:
        (tag, raw), = stack.pop().items()
        size = _SIZES.get(tag[0])
        if tag in ("BOOL", "NULL"):
            total += 1
        elif size is not None:  # a scalar, or a set of them (SS, NS, BS)
            total += size(raw) if len(tag) == 1 else sum(map(size, raw))
        elif tag == "L":
            total += 3 + len(raw)
            stack.extend(raw)
        else:
            total += 3 + sum(text_size(k) + 1 for k in raw)
            stack.extend(raw.values())
    return total


#: the size of a scalar of each type (a set's: the sum of its members')
_SIZES: dict[str, Callable[[Any], int]] = {"S": text_size, "N": number_size, "B": len}


def item_size(item: Item) -> int:
    """DynamoDB's size of an item: attribute names plus values."""
    return sum(text_size(name) + value_size(av) for name, av in item.items())


def _add(old: AttributeValue | None, av: AttributeValue) -> AttributeValue:
    if old is None:
        return av
    if "N" in av and "N" in old:
        total = _EXACT.add(Decimal(old["N"]), Decimal(av["N"]))
        return {"N": str(total)}
    (tag, members), = av.items()
    if tag in old:
        merged = list(old[tag]) + [m for m in members if m not in old[tag]]
        return {tag: merged}
    return av


def updated_item(known: Item, set_: Mapping[str, AttributeValue], remove: Sequence[str],
                 clauses: Sequence[Clause], members: Sequence[Member] = ()) -> Item:
    """The item an update makes of the stored item ``known`` (``SET``/``REMOVE``, or
    ``s.update()`` clauses: ``SET``, ``DEFAULT``, ``APPEND``, ``PREPEND``, ``ADD``,
    ``DELETE``, ``REMOVE``; ``members``: writes of map members by path), for checking its
    size before sending."""
    out = dict(known)
    for name in remove:
        out.pop(name, None)
    out.update(set_)
    if members:
        out = with_members(out, members)
    for kind, name, av in clauses:
        old = out.get(name)
        if kind == "REMOVE" or av is None:
            out.pop(name, None)
        elif kind == "SET" or (kind == "DEFAULT" and old is None):
            out[name] = av
        elif kind in ("APPEND", "PREPEND"):
            out[name] = _appended(kind, old, av)
        elif kind == "ADD":
            out[name] = _add(old, av)
        elif kind == "DELETE" and old is not None:
            (tag, members), = av.items()
            left = [m for m in old.get(tag, []) if m not in members]
            if left:
                out[name] = {tag: left}
            else:
                out.pop(name, None)
    return out


def _appended(kind: str, old: AttributeValue | None, av: AttributeValue) -> AttributeValue:
    """The list an ``APPEND`` (or ``PREPEND``) of ``av`` makes of ``old``."""
    before = list(old["L"]) if old and "L" in old else []
    after = list(av.get("L", []))
    return {"L": before + after if kind == "APPEND" else after + before}


def with_members(item: Item, members: Sequence[Member]) -> Item:
    """``item`` with writes of map members by path applied (a copy of each map it
    changes; a path through no map changes nothing, as DynamoDB would refuse it)."""
    out = dict(item)
    for path, av in members:
        at = out
        for name in path[:-1]:
            inner = at.get(name)
            if type(inner) is not dict or type(inner.get("M")) is not dict:
                break
            copied = dict(inner["M"])
            at[name] = {"M": copied}
            at = copied
        else:
            if av is None:
                at.pop(path[-1], None)
            else:
                at[path[-1]] = av
    return out


# -- single values ---------------------------------------------------------------------------
def _utf8_problem(text: str) -> str | None:
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return (f"string is not valid UTF-8 (lone surrogate {text[exc.start]!r} at "
                f"position {exc.start})")
    return None


def number_problem(text: str) -> str | None:
    """Why DynamoDB refuses the number ``text`` (``None``: it stores it)."""
    number = _parse_number(text)
    if number is None:
        return f"{text!r} is not a finite number"
    if number.is_zero():
        return None
    digits = number.normalize(_EXACT).as_tuple().digits
    if len(digits) > MAX_DIGITS:
        return (f"number {text} has {len(digits)} significant digits; DynamoDB keeps at most "
                f"{MAX_DIGITS}")
    magnitude = number.copy_abs()
    if magnitude < _LOW or magnitude >= _HIGH:
        return (f"number {text} is outside DynamoDB's range (magnitude 1E-130 up to "
                "9.99...E+125)")
    return None


def _set_problem(tag: str, raw: Any) -> str | None:
    if not isinstance(raw, list | tuple | set | frozenset) or not raw:
        return f"a {tag} set must hold at least one member"
    for member in raw:
        if tag == "SS":
            problem = _utf8_problem(member) if isinstance(member, str) else "not a string"
        elif tag == "NS":
            problem = number_problem(member)
        else:
            problem = None if isinstance(member, bytes | bytearray) else "not bytes"
        if problem:
            return f"set member: {problem}"
    return None


def value_problem(av: AttributeValue) -> tuple[str, str] | None:
    """``(path inside the value, reason)`` of the first thing DynamoDB would refuse in
    ``av`` (``None``: nothing). Iterative: any depth is answered, never recursed."""
    stack = [(av, "", 1)]  # (values may come from anywhere)
    while stack:
        value, path, depth = stack.pop()
        if not isinstance(value, Mapping) or len(value) != 1:
            return path, f"malformed AttributeValue {value!r}"
        (tag, raw), = value.items()
        problem = None
        if tag == "S":
            problem = _utf8_problem(raw)
        elif tag == "N":
            problem = number_problem(raw)
        elif tag in ("SS", "NS", "BS"):
            problem = _set_problem(tag, raw)
        elif tag in ("M", "L"):
            if depth > MAX_NESTING:
                return path, (f"maps and lists nested more than {MAX_NESTING} levels deep; "
                              "DynamoDB refuses deeper documents")
            if tag == "M":
                for name in raw:
                    problem = _name_problem(name)
                    if problem:
                        return f"{path}.{name!r}" if name else path, problem
                    stack.append((raw[name], f"{path}.{name}", depth + 1))
            else:
                stack.extend((v, f"{path}[{i}]", depth + 1) for i, v in enumerate(raw))
        if problem:
            return path, problem
    return None


def _name_problem(name: Any) -> str | None:
    if not isinstance(name, str) or not name:
        return "empty attribute name (DynamoDB refuses empty names, also as map keys)"
    return _utf8_problem(name)


# -- items and keys ---------------------------------------------------------------------------
def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}...({len(text)} characters)"


def describe_key(key: Mapping[str, Any]) -> str:
    """A key for an error message, long values cut short."""
    return "{" + ", ".join(f"{k!r}: {_short(v)}" for k, v in key.items()) + "}"


def _where(entity: str, key: Mapping[str, Any], name: str, path: str = "") -> str:
    return (f"{entity} {describe_key(key)}: field {name!r}"
            f"{' at ' + _short(path.lstrip('.')) if path else ''}")


def check_key_value(name: str, av: AttributeValue, role: str, *, entity: str,
                    key: Mapping[str, Any]) -> None:
    """A key attribute's value (``role`` "partition" or "sort"): non-empty, valid, within
    DynamoDB's byte limit; else :class:`KeyTemplateError`."""
    limit = MAX_PARTITION_KEY_BYTES if role == "partition" else MAX_SORT_KEY_BYTES
    text = av.get("S") if type(av) is dict and len(av) == 1 else None
    if type(text) is str and text.isascii() and 0 < len(text) <= limit:
        return  # an ASCII string: one byte a character, nothing else to refuse
    found = value_problem(av)
    if found is not None:
        raise KeyTemplateError(f"{_where(entity, key, name)}: key value refused: {found[1]}")
    size = value_size(av)
    if size == 0:
        raise KeyTemplateError(f"{_where(entity, key, name)}: a key attribute cannot be empty")
    if size > limit:
        raise KeyTemplateError(f"{_where(entity, key, name)}: {role} key value of {size} bytes "
                               f"exceeds DynamoDB's {limit} byte limit")


def check_values(values: Iterable[tuple[str, AttributeValue]], *, entity: str,
                 key: Mapping[str, Any], key_roles: Mapping[str, str]) -> None:
    """Every ``(attribute name, value)``: valid names and values, and key attributes
    (``key_roles``: name -> "partition"/"sort") within their limits."""
    for name, av in values:
        problem = _name_problem(name)
        if problem:
            raise InvalidValueError(f"{entity} {describe_key(key)}: attribute {_short(name)}: "
                                    f"{problem}")
        role = key_roles.get(name)
        if role is not None:
            check_key_value(name, av, role, entity=entity, key=key)
            continue
        found = value_problem(av)
        if found is not None:
            path, reason = found
            raise InvalidValueError(f"{_where(entity, key, name, path)}: {reason}")


def check_item(item: Item, *, entity: str, key: Mapping[str, Any],
               key_roles: Mapping[str, str], key_item: Item | None = None) -> int:
    """Check a whole item: its size, then ``key_item``'s values (a key problem is
    reported as such first; without one, the item's attributes that ``key`` names come
    first), then the item's, with :func:`check_values`; returns its size.

    One pass over the item. An ASCII string under a non-empty ASCII name (a key
    attribute's only within its key limit and not empty: nearly every attribute) holds
    nothing DynamoDB could refuse and weighs one byte a character: it is sized as such
    and not walked; so is a plain integer under such a name (not a key attribute: see
    :func:`_int_size`); any other attribute is sized and walked. The gate of a new entity
    with two unique fields (three Puts) thus costs about 4 us a Put instead of about 9
    (30 without the shortcut; a number the long way, two parses by ``Decimal``: about 5
    us); tests/equivalence/test_caches_and_sizes.py holds it to the plain path on
    generated items."""
    size = 0
    rest = []
    for name, av in item.items():
        if type(av) is dict and len(av) == 1 and type(name) is str and name and (
                name.isascii()):
            text = av.get("S")
            if type(text) is str:
                if text.isascii():
                    role = key_roles.get(name)
                    if role is None or 0 < len(text) <= (
                            MAX_PARTITION_KEY_BYTES if role == "partition"
                            else MAX_SORT_KEY_BYTES):
                        size += len(name) + len(text)
                        continue
            elif name not in key_roles and (n := _int_size(av.get("N"))):
                size += len(name) + n
                continue
        size += _size_or_zero(name, av)  # (a malformed value: check_values refuses it)
        rest.append((name, av))
    check_size(size, entity=entity, key=key)
    if key_item is not None:
        check_values(key_item.items(), entity=entity, key=key, key_roles=key_roles)
    elif len(rest) > 1:  # the item's own key attributes first, in the key's order
        order = {name: at for at, name in enumerate(key)}
        rest.sort(key=lambda attr: order.get(attr[0], len(order)))
    check_values(rest, entity=entity, key=key, key_roles=key_roles)
    return size


def _int_size(text: Any) -> int:
    """:func:`number_size` of an integer written plainly (``-`` and at most 38 ASCII
    digits, no leading zero): nothing DynamoDB refuses; 0 for any other number (or not a
    string), which is sized and checked the long way."""
    if type(text) is not str:
        return 0
    digits = text[1:] if text[:1] == "-" else text
    if not (0 < len(digits) <= MAX_DIGITS and digits.isascii() and digits.isdigit()):
        return 0
    if digits[0] == "0":  # (a zero, 1 byte; or leading zeros: the long way)
        return int(digits == "0")
    zeros = len(digits) - len(digits.rstrip("0"))
    return (len(digits) - 1) // 2 - zeros // 2 + 2 + (len(text) - len(digits))


def _size_or_zero(name: Any, av: Any) -> int:
    """An attribute's size, 0 for a value too malformed to have one."""
    try:
        return (text_size(name) if type(name) is str else 0) + value_size(av)
    except (AttributeError, TypeError, ValueError):
        return 0


def check_size(size: int, *, entity: str, key: Mapping[str, Any], what: str = "item") -> int:
    """``size`` if an item of that many bytes fits, else :class:`ItemTooLargeError`."""
    if size > MAX_ITEM_BYTES:
        raise ItemTooLargeError(f"{entity} {describe_key(key)}: {what} of {size} bytes exceeds "
                                f"DynamoDB's {MAX_ITEM_BYTES} byte item limit")
    return size


def check_read_key(table: Any, key: PlainKey, entity: str) -> None:
    """A key read by GetItem (also to plan a write): valid and within DynamoDB's key
    limits, else :class:`~dynaorm.KeyTemplateError` (DynamoDB would refuse the read).
    (Here, not in :mod:`dynaorm.write.render`: a read checks its key without loading the
    write path.)"""
    roles = {table.pk: "partition"}
    if table.sk:
        roles[table.sk] = "sort"
    check_values(wire_key(key).items(), entity=entity, key=key, key_roles=roles)


def short_repr(value: Any) -> str:
    """``repr(value)`` as a message shows it: at most about 60 characters, a longer one
    cut, with its length when it has one (a vector of 4,096 numbers is not printed)."""
    text = repr(value)
    if len(text) <= 60:
        return text
    size = f", {len(value)} items" if isinstance(value, Sized) else ""
    return f"{text[:60]}... ({type(value).__name__}{size})"


def float32(values: Sequence[Any]) -> list[float]:
    """``values`` rounded to the nearest 32-bit floats, as a vector index holds them; a
    ``ValueError`` names the first that is not a finite number within float32's range."""
    try:
        out = array("f", values).tolist()
    except TypeError as exc:
        raise ValueError(f"a vector holds numbers only ({exc})") from None
    if not all(map(math.isfinite, out)):
        at = next(i for i, v in enumerate(out) if not math.isfinite(v))
        raise ValueError(f"element {at} ({short_repr(values[at])}) is not a finite number "
                         "within float32's range (about +-3.4e38)")
    return out
