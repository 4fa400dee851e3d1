"""Key templates: ``"ORG#{org_id}#USER#{user_id}"`` rendered from an entity's fields.

A template is parsed once (at class definition) into literal and field segments. It can
render a full key, render the prefix made of its leading fields (for ``begins_with`` and
range queries), and parse a rendered key back into its field strings.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import itertools
import re
import string
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from dynaorm.errors import KeyTemplateError
from dynaorm.values.keys import BinaryKey, NumberKey, key_value, number_key

#: The pseudo-field that write sharding fills in (never an entity field).
SHARD_FIELD = "shard"
_CONVERSIONS = {"u": str.upper, "l": str.lower}
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
#: format specs a key parses back through exactly: none, or an integer's zero padding
_EXACT_SPEC = re.compile(r"(0?[0-9]*d)?\Z")


def render_value(value: Any, spec: str = "") -> str:
    """Render one value the way keys need it (see the contract's typing rules)."""
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, datetime):
        moment = value.astimezone(UTC) if value.tzinfo is not None else value
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
    #: the first character of the literal that follows the field in its template (its
    #: separator, which a value may not contain), ``""`` for the template's last field
    sep: str = ""
    #: the separators the field has in its entity's other templates (contract 23: a value
    #: may hold none of them), less ``#`` and ``sep``
    also: str = ""

    @property
    def refuses(self) -> frozenset[str]:
        """Every character a value of the field may not hold (its separators, ``#``)."""
        return frozenset(("#", self.sep, *self.also)) - {""}

    def refused(self, text: str) -> str | None:
        """The first character of ``text`` the grammar refuses in this field (``#``, the
        field's separator, or one of its separators in the entity's other templates),
        else ``None``."""
        if "#" in text:
            return "#"
        if self.sep and self.sep in text:
            return self.sep
        return next((c for c in self.also if c in text), None) if self.also else None


@dataclass(frozen=True)
class KeyTemplate:
    """A parsed key template. Build with :meth:`parse`."""

    source: str
    segments: tuple[str | _Field, ...]
    #: the key attribute's type: "S", or "N"/"B" for a template that is exactly one field
    key_type: str = "S"

    @classmethod
    def parse(cls, source: str, *, owner: str = "?", key_type: str = "S") -> KeyTemplate:
        """Parse ``source`` (``key_type``: the attribute's DynamoDB type)."""
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
        template = cls(source, _separated(segments), key_type)
        head = template.segments[0]
        if key_type != "S" and (template.single is None or not isinstance(head, _Field)
                                or head.spec or head.conversion):
            raise KeyTemplateError(
                f"{owner}: a {key_type} key's template must be exactly one field such as "
                f"'{{id}}', not {source!r}")
        return template

    # -- introspection -------------------------------------------------------------
    @functools.cached_property
    def fields(self) -> tuple[str, ...]:
        """Field names in template order (``shard`` included when present)."""
        return tuple(s.name for s in self.segments if isinstance(s, _Field))

    @property
    def is_literal(self) -> bool:
        """Whether the template has no field (a constant key)."""
        return not self.fields

    @functools.cached_property
    def exact_fields(self) -> frozenset[str]:
        """Fields whose value the key gives back exactly when parsed (a key-only field
        must be one): no ``!u``/``!l`` conversion, and no format spec but zero padding of
        an integer (``{n:08d}``); a typed (``N``/``B``) key's one field always."""
        if self.key_type != "S":
            return frozenset(self.fields)
        return frozenset(s.name for s in self.segments if isinstance(s, _Field)
                         and s.conversion is None and _EXACT_SPEC.match(s.spec))

    @functools.cached_property
    def single(self) -> str | None:
        """The field name of a template that is exactly one field (``"{id}"``), else None."""
        if len(self.segments) == 1 and isinstance(self.segments[0], _Field):
            return self.segments[0].name
        return None

    # -- rendering -----------------------------------------------------------------
    def _render_field(self, seg: _Field, values: Mapping[str, Any], owner: str,
                      *, check: bool = True) -> str:
        try:
            value = values[seg.name]
        except KeyError:
            raise KeyTemplateError(
                f"{owner}: key template {self.source!r} needs field {seg.name!r}",
                field=seg.name) from None
        if value is None:
            raise KeyTemplateError(
                f"{owner}: field {seg.name!r} is None and cannot go into key {self.source!r}",
                field=seg.name)
        try:
            text = render_value(value, seg.spec)
        except (ValueError, TypeError) as exc:
            raise KeyTemplateError(
                f"{owner}: field {seg.name!r} value {value!r} does not fit format "
                f"{seg.spec!r} of key {self.source!r}: {exc}", field=seg.name) from exc
        if seg.conversion:
            text = _CONVERSIONS[seg.conversion](text)
        if check and self.single is not None and text:
            # one field: nothing to split, so '#' is allowed, unless another template of
            # the entity gives the field a separator (``also``: '#' among them)
            bad = next((c for c in seg.also if c in text), None)
            if bad is None:
                return text
            raise KeyTemplateError(
                f"{owner}: field {seg.name!r} value {value!r} contains {bad!r}, a "
                "separator that follows it in another key template of the entity; it "
                f"cannot go into key {self.source!r}", field=seg.name)
        refused = seg.refused(text) if check and text else None
        if check and (not text or refused):
            raise self._refusal(seg, value, text, refused, owner)
        return text

    def _refusal(self, seg: _Field, value: Any, text: str, refused: str | None,
                 owner: str) -> KeyTemplateError:
        """The error for ``value`` of ``seg`` rendered as ``text``: empty, or holding the
        separator ``refused``."""
        why = "is empty" if not text else (
            "contains '#'" if refused == "#" else
            f"contains {refused!r}, the separator that follows it in the key" if (
                refused == seg.sep) else
            f"contains {refused!r}, a separator that follows it in another key "
            "template of the entity")
        return KeyTemplateError(
            f"{owner}: field {seg.name!r} value {value!r} {why}; "
            f"it cannot go into key {self.source!r}", field=seg.name)

    def render(self, values: Mapping[str, Any], owner: str = "?") -> str:
        """Render the full key from ``values`` (a mapping of field name to value). Every
        path checks each value by :meth:`_Field.refused`'s rule (``#``, the field's
        separator, its separators in the entity's other templates): a plain ``str``
        value is rendered as itself once checked (the rule inlined where the field
        refuses ``#`` and its separator alone), any other by :meth:`_render_field`."""
        if self.key_type != "S":
            return self._typed(values, owner)
        if not self.fields:  # a constant key ("PROFILE"), rendered once
            return self._constant
        simple = self._prefixed
        if simple is not None:  # "USER#{id}", the common key: the loop's rule, unrolled
            value = values.get(simple[1])
            if type(value) is str and value and "#" not in value:
                return simple[0] + value
        out = []
        single = self.single
        for seg in self.segments:
            if isinstance(seg, str):
                out.append(seg)
                continue
            # the common case first: a plain str value under a field without format or
            # conversion renders as itself (_Field.refused's rule, inlined: a field
            # refusing more than '#' and its separator is checked by _render_field)
            value = values.get(seg.name)
            if (type(value) is str and value and not seg.spec and seg.conversion is None
                    and not seg.also and (single is not None or (
                        "#" not in value and (not seg.sep or seg.sep not in value)))):
                out.append(value)
            else:
                out.append(self._render_field(seg, values, owner))
        return "".join(out)

    @functools.cached_property
    def _prefixed(self) -> tuple[str, str] | None:
        """``(literal, field)`` of a template that is a literal then one plain field (no
        format or conversion) refusing ``#`` alone (it ends the key; no other template
        of the entity gives it a separator), the common key: :meth:`render` answers a
        plain str value for it without its loop; ``None`` for any other template (0.8's
        shortcut ignored the separators of the entity's other templates)."""
        if len(self.segments) != 2:
            return None
        literal, seg = self.segments
        if (isinstance(literal, str) and isinstance(seg, _Field) and not seg.spec
                and seg.conversion is None and seg.refuses == {"#"}):
            return literal, seg.name
        return None

    @functools.cached_property
    def _constant(self) -> str:
        """The key of a template without fields (``{{``/``}}`` unescaped)."""
        return "".join(s for s in self.segments if isinstance(s, str))

    def _typed(self, values: Mapping[str, Any], owner: str) -> str:
        name = self.single
        assert name is not None
        value = values.get(name)
        if value is None:
            raise KeyTemplateError(f"{owner}: field {name!r} is None and cannot go into key "
                                   f"{self.source!r}", field=name)
        if self.key_type == "N":
            return number_key(value, owner, name)
        if not isinstance(value, bytes | bytearray | memoryview) or not value:
            raise KeyTemplateError(f"{owner}: field {name!r} value {value!r} is not non-empty "
                                   f"bytes and cannot go into binary key {self.source!r}",
                                   field=name)
        return BinaryKey(bytes(value))

    def render_prefix(self, values: Mapping[str, Any], owner: str = "?",
                      *, partial: str | None = None) -> str:
        """Render the leading part of the key covered by ``values``.

        Fields are consumed in template order while present in ``values``; the literal
        that follows the last complete field is included (so ``"amsg#"`` never matches
        ``"amsgx#"``). ``partial`` names a field whose value is a prefix of a full value
        (``date="2018-08"``): rendering stops right after it.
        """
        if self.key_type != "S":
            if partial is not None:
                raise KeyTemplateError(f"{owner}: begins_with does not apply to the "
                                       f"{self.key_type} key {self.source!r}")
            return self._typed(values, owner) if self.fields[0] in values else ""
        out = []
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

    def separators(self, name: str) -> frozenset[str]:
        """The characters a value of field ``name`` may not hold in this template: ``#``
        and the field's separator (none in a template that is exactly one field)."""
        if self.single is not None or self.key_type != "S":
            return frozenset()
        return frozenset().union(*(s.refuses for s in self.segments
                                   if isinstance(s, _Field) and s.name == name))

    def scope_prefix(self, names: Iterable[str]) -> tuple[tuple[str, ...], bool] | None:
        """The leading part of this template that proves a key belongs to a scope over the
        fields ``names`` (for IAM's ``dynamodb:LeadingKeys``): ``(parts, exact)``. The parts
        are literal texts and scope fields (as ``"{name}"``) from the start through the
        first character of the literal after the last scope field (a character no value of
        that field may hold); ``exact`` when the template ends at that field (the key is
        then the prefix itself). ``None`` when no prefix proves it: a scope field is not in
        the template's leading run of fields, it is converted or formatted (``!l``: two
        values would render alike), or the template is exactly one field (its value may
        hold anything)."""
        wanted = set(names)
        if self.key_type != "S" or self.single is not None or not wanted:
            return None
        parts = []
        for i, seg in enumerate(self.segments):
            if isinstance(seg, str):
                if not wanted:
                    parts.append(seg[0])
                    return tuple(parts), False
                parts.append(seg)
                continue
            if seg.name not in wanted or seg.name not in self.exact_fields or seg.spec:
                return None
            parts.append("{" + seg.name + "}")
            wanted.discard(seg.name)
            if not wanted and i == len(self.segments) - 1:
                return tuple(parts), True
        return None

    def prefix_through(self, name: str) -> str:
        """The source of this template from its start through the first field ``name``,
        as written (its conversion and format spec kept, literals escaped): a template of
        the keys' leading part (``"ORG#{n:05d}"`` of ``"ORG#{n:05d}#U#{uid}"``)."""
        out = []
        for seg in self.segments:
            if isinstance(seg, str):
                out.append(seg.replace("{", "{{").replace("}", "}}"))
                continue
            conversion = "" if seg.conversion is None else "!" + seg.conversion
            out.append("{" + seg.name + conversion + (seg.spec and ":" + seg.spec) + "}")
            if seg.name == name:
                return "".join(out)
        raise KeyTemplateError(f"key template {self.source!r} has no field {name!r}")

    def refusing(self, refused: Mapping[str, frozenset[str]]) -> KeyTemplate:
        """This template with each field also refusing the characters ``refused`` names
        for it (its separators in the entity's other templates); itself when none adds."""
        if self.key_type != "S":
            return self
        if self.single is not None:  # (one field: its value may hold '#', nothing to
            # split, but none of its separators in the entity's other templates)
            seg = self.segments[0]
            assert isinstance(seg, _Field)
            also = "".join(sorted(refused.get(seg.name, frozenset())))
            return self if also == seg.also else dataclasses.replace(
                self, segments=(dataclasses.replace(seg, also=also),))
        segments = tuple(
            dataclasses.replace(s, also="".join(sorted(refused.get(s.name, frozenset())
                                                       - {"#", s.sep})))
            if isinstance(s, _Field) else s for s in self.segments)
        return self if segments == self.segments else dataclasses.replace(
            self, segments=segments)

    def leading_fields(self, names: set[str] | frozenset[str]) -> tuple[str, ...]:
        """The longest run of template fields, from the start, that ``names`` covers."""
        return tuple(itertools.takewhile(names.__contains__, self.fields))

    # -- parsing back --------------------------------------------------------------
    def parse_key(self, key: str) -> dict[str, Any] | None:
        """Split a rendered key back into field strings; ``None`` if it does not match.

        A typed key (``N``/``B``) gives its one field's number text or bytes.
        """
        if self.key_type != "S" or self.single is not None:
            return self._parse_single(key)
        m = self._pattern.fullmatch(key)
        return None if m is None else m.groupdict()

    def _parse_single(self, key: str) -> dict[str, Any] | None:
        name = self.single
        assert name is not None
        if self.key_type == "N":
            return {name: str.__str__(key)} if isinstance(key, NumberKey) else None
        if self.key_type == "B":
            return {name: key.raw} if isinstance(key, BinaryKey) else None
        if isinstance(key, NumberKey | BinaryKey) or not key:
            return None
        return {name: key}

    @functools.cached_property
    def _pattern(self) -> re.Pattern[str]:
        return re.compile(self._regex({}) or "(?!)")

    def _regex(self, fixed: Mapping[str, str]) -> str | None:
        """The regular expression of this template's keys (of strings, of more than one
        field) whose fields ``fixed`` names hold exactly the text it gives them: the one
        reading of the grammar, which :meth:`parse_key` (nothing fixed) and
        :meth:`matcher` compile. Each literal stands for itself; each field is the text
        its slot may hold (anything but ``#``, its separator and its separators in the
        entity's other templates: a field ends where its separator begins, so a key
        parses one way at most), captured by name; a fixed field is its text instead
        (``None``: its slot cannot hold that text, so no key parses to it). A field
        named twice (``"AT#{at}#M#{at:%Y-%m}"``) is captured once: a repeat rendered alike
        must hold the same text (a key whose two differ is none of the template's), one
        rendered otherwise is matched, not captured. A fixed field must be plain (no
        format or conversion): :meth:`matcher` asks only those."""
        first: dict[str, _Field] = {}
        parts = []
        for s in self.segments:
            if isinstance(s, str):
                parts.append(re.escape(s))
                continue
            refused = "#" + s.sep + s.also
            text = f"[^{re.escape(refused)}]+"
            seen = first.setdefault(s.name, s)
            alike = (seen.spec, seen.conversion) == (s.spec, s.conversion)
            if s.name in fixed and alike:
                want = fixed[s.name]  # (a repeat is the first's text, as a backreference)
                if seen is s and (not want or any(c in refused for c in want)):
                    return None
                parts.append(re.escape(want))
            elif seen is s:
                parts.append(f"(?P<{s.name}>{text})")
            elif alike:
                parts.append(f"(?P={s.name})")
            else:
                parts.append(f"(?:{text})")
        return "".join(parts)

    def matcher(self, fixed: Mapping[str, str]) -> Callable[[str], object] | None:
        """The test, on a key's text (a plain ``str``), of whether :meth:`parse_key`
        parses it and gives each field ``fixed`` names (name -> text) exactly its text:
        truthy exactly then. Built from :meth:`_regex`, the same reading of the grammar
        as :meth:`parse_key`'s, with the fixed fields' texts in their slots (one string
        comparison when no other field is left: the key is then one text). ``None`` for
        what it does not decide: a typed (``N``/``B``) key, or a fixed field rendered
        with a format or a conversion (its key text is not the text given: ask
        :meth:`parse_key`). A fixed name the template lacks: nothing matches. ``fixed``
        names one field at least."""
        if self.key_type != "S" or any(
                isinstance(s, _Field) and s.name in fixed and (s.spec or s.conversion)
                for s in self.segments):
            return None
        if not set(fixed) <= set(self.fields):
            return _never
        if self.single is not None:  # (the whole key is the field)
            return fixed[self.single].__eq__
        found = self._regex(fixed)
        if found is None:
            return _never
        prefix, whole, _ = self.leading_text(fixed)  # (whole: literals and fixed texts,
        return prefix.__eq__ if whole else re.compile(found).fullmatch  # one key)

    def matcher_all(self, fixed: Mapping[str, str]) -> Callable[[list[str]], bool] | None:
        """:meth:`matcher` of a whole list of keys at once (``True``: every key matches),
        ``None`` where :meth:`matcher` is. Where the template is the fixed fields' text
        (:meth:`leading_text`'s ``prefix``) then one field's slot (``TENANT#{t}#T#{id}``
        fixed on ``t``), each key is that prefix then text the slot holds (non-empty,
        none of the characters it refuses): asked of the whole list joined, by counting
        (the same decision as the slot's pattern, without a match per key); else
        :meth:`matcher` of each."""
        test = self.matcher(fixed)
        if test is None:
            return None
        if test is _never:
            return lambda keys: not keys
        prefix = self.leading_text(fixed)[0]
        rest = self._after(fixed)
        if rest is None:
            return lambda keys: all(map(test, keys))
        refused = "#" + rest.sep + rest.also
        if "\0" in refused or "\0" in prefix:  # (the sentinel below: then key by key)
            return lambda keys: all(map(test, keys))
        head, empty = "\0" + prefix, "\0" + prefix + "\0"
        inside = [(c, prefix.count(c)) for c in refused]

        def every(keys: list[str]) -> bool:
            n = len(keys)
            if not n:
                return True
            # each key between sentinels: it begins with the prefix (counted: the
            # prefix holds no sentinel, so two never overlap), is more than the prefix,
            # and its slot holds no refused character (counted over the whole text)
            text = "\0" + "\0".join(keys) + "\0"
            if text.count("\0") != n + 1:  # (a key holding the sentinel: key by key)
                return all(map(test, keys))
            return (text.count(head) == n and empty not in text
                    and all(text.count(c) == n * k for c, k in inside))

        return every

    def _after(self, fixed: Mapping[str, str]) -> _Field | None:
        """The template's last segment, when it is the one field left after the fixed
        fields' text (what :meth:`matcher_all` reads as a slot), else ``None``: more is
        left, or that field is fixed, or named twice (a repeat must hold the first's)."""
        *head, last = self.segments
        if not isinstance(last, _Field) or last.name in fixed or self.fields.count(
                last.name) != 1 or any(not isinstance(s, str) and s.name not in fixed
                                       for s in head):
            return None
        return last

    def leading_text(self, fixed: Mapping[str, str]) -> tuple[str, bool, tuple[str, ...]]:
        """What every key whose parse gives the fields ``fixed`` names their texts (every
        key :meth:`matcher` matches) holds, as text: ``(prefix, whole, inner)``. It
        begins with ``prefix`` (the template's literals and the fixed fields' texts from
        its start up to its first other field, or one rendered with a format or a
        conversion), is exactly ``prefix`` when ``whole`` (the template ends there), and
        contains each text of ``inner`` (the plain fixed fields' texts after the
        prefix). ``("", False, ())`` for a typed key."""
        if self.key_type != "S":
            return "", False, ()
        out = []
        inner = []
        stopped = False
        for s in self.segments:
            if isinstance(s, str):
                if not stopped:
                    out.append(s)
                continue
            plain = s.name in fixed and not s.spec and s.conversion is None
            if stopped or not plain:
                stopped = True
                if plain and fixed[s.name] not in inner:
                    inner.append(fixed[s.name])
                continue
            out.append(fixed[s.name])
        return "".join(out), not stopped, tuple(inner)

    # -- specificity -----------------------------------------------------------------
    def covers(self, other: KeyTemplate) -> bool:
        """Whether every key ``other`` renders parses under this template (this one is as
        wide or wider: ``"AUDIT#{kind}#{ref}"`` covers ``"AUDIT#ORDER#{oid}"``, not the
        reverse). Decided by :meth:`parse_key` itself: ``other`` rendered with each field's
        value a marker character no template holds, parsed; it is covered when it parses
        and each field of this template took literal text of ``other`` or markers of
        fields that refuse at least what it refuses (any value of theirs then parses the
        same way). A one-field template covers every key of its type."""
        if self.key_type != "S" or self.single is not None or other.single is not None:
            return self.key_type == other.key_type and (self.single is not None
                                                        or self.key_type != "S")
        fields = [s for s in other.segments if isinstance(s, _Field)]
        marked = self.parse_key("".join(chr(_MARKS + fields.index(s)) if isinstance(
            s, _Field) else s for s in other.segments))
        if marked is None:
            return False
        return all(seg.refuses <= fields[ord(c) - _MARKS].refuses for seg in self.segments
                   if isinstance(seg, _Field) for c in marked[seg.name] if ord(c) >= _MARKS)

    def __str__(self) -> str:
        return self.source


def _never(_: str) -> bool:
    """The test of a key that nothing matches (:meth:`KeyTemplate.matcher`)."""
    return False


#: the first of the marker characters :meth:`KeyTemplate.covers` renders fields as (in
#: Unicode's private use area: no template's literal holds one)
_MARKS = 0xF0000


def _separated(segments: list[str | _Field]) -> tuple[str | _Field, ...]:
    """``segments`` with each field's separator set: the first character of the literal
    after it (a value of the field may not hold it)."""
    return tuple(dataclasses.replace(seg, sep=after[0])
                 if isinstance(seg, _Field) and isinstance(after, str) else seg
                 for seg, after in itertools.zip_longest(segments, segments[1:]))


def literal_outranks(a_pk: KeyTemplate, a_sk: KeyTemplate | None, b_pk: KeyTemplate,
                     b_sk: KeyTemplate | None) -> bool:
    """Whether an item whose key fits both ``a``'s and ``b``'s templates is ``a``'s: ``a``
    has a literal key (``"METADATA"``) where ``b`` has a template (``"{timestamp}"``),
    and ``b`` has none where ``a`` has a template. Two templates never outrank each other."""
    pairs = [(a_pk, b_pk)]
    if a_sk is not None and b_sk is not None:
        pairs.append((a_sk, b_sk))
    wins = any(x.is_literal and not y.is_literal for x, y in pairs)
    loses = any(y.is_literal and not x.is_literal for x, y in pairs)
    return wins and not loses


def field_template(source: Any, what: str, owner: str, fields: frozenset[str],
                   shard_ok: bool, key_type: str = "S") -> KeyTemplate:
    """A declared template (``what`` of ``owner``), refused if it names a field that is
    not in ``fields``, or ``{shard}`` where it is not sharded (``shard_ok``)."""
    template = KeyTemplate.parse(source, owner=owner, key_type=key_type)
    for name in template.fields:
        if name == SHARD_FIELD and shard_ok:
            continue
        if name == SHARD_FIELD:
            raise KeyTemplateError(f"{owner}: {what} template {source!r} uses {{shard}} but "
                                   "Meta.shards does not shard it")
        if name not in fields:
            raise KeyTemplateError(f"{owner}: {what} template {source!r} names unknown "
                                   f"field {name!r}")
    return template


def parse_keys(item: Mapping[str, Any], checks: Any) -> dict[str, Any] | None:
    """The field values the key templates of ``checks`` hold in ``item``'s key attributes
    (each ``(attribute, template, prefix)``; ``prefix``: the sort-key prefix of an
    entity's own rows, a latest copy's ``v0_``, read off first), or ``None`` when one does
    not fit."""
    out = {}
    for attr, template, prefix in checks:
        av = item.get(attr)
        if av is None:
            return None
        text = key_value(av)
        if prefix:  # (a number or binary key has none: it stays one)
            if not text.startswith(prefix):
                return None
            text = text[len(prefix):]
        parsed = template.parse_key(text)
        if parsed is None:
            return None
        out.update(parsed)
    return out
