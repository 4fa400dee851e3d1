"""Entity code from a model (:mod:`dynaorm.schema.model`'s data): what ``dynaorm model
--import`` prints. The code defines the table, the nested models, the entity classes and
the access patterns a design declares, and ``table.model()`` of what it defines gives the
model back (its derived parts recomputed)."""

from __future__ import annotations

import ast
import builtins
import importlib
import keyword
import math
import re
import sys
import types
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

from dynaorm.errors import ModelFileError
from dynaorm.formats import read
from dynaorm.formats._common import named
from dynaorm.schema.places import OFFLOAD_THRESHOLD

__all__ = ["code_of", "identifier", "import_code"]

#: the modules the code names things of, each under an alias no design name can take (a
#: class or field name never starts with ``_``): ``_d.Entity``, ``_p.Field``
_ALIASES: Final = {"_d": "dynaorm", "_p": "pydantic", "_t": "typing", "_dt": "datetime",
                   "_dec": "decimal", "_uuid": "uuid", "_b": "builtins"}
#: model type names -> their annotation (a builtin's name is qualified when the design
#: takes it: :meth:`_Writer.builtin`)
_SCALARS: Final = {
    "string": "str", "integer": "int", "number": "float", "decimal": "_dec.Decimal",
    "boolean": "bool", "binary": "bytes", "datetime": "_dt.datetime", "date": "_dt.date",
    "uuid": "_uuid.UUID", "any": "_t.Any"}
#: model types whose default is text, and the function that reads the value from it
_PARSED: Final = {"decimal": "_dec.Decimal", "binary": "bytes.fromhex",
                  "datetime": "_dt.datetime.fromisoformat", "date": "_dt.date.fromisoformat",
                  "uuid": "_uuid.UUID"}
#: the names a module sees as builtins: no table's variable takes one
_BUILTINS: Final = frozenset(dir(builtins))
_TABLE_DEFAULTS: Final = {"pk": "pk", "sk": "sk", "type_attribute": "_type",
                          "revision_attribute": "_rev", "ttl": None, "stream": None,
                          "offload": None, "offload_threshold": OFFLOAD_THRESHOLD}
#: the helper the functions of a design that could not be named call (lambdas)
_TODO: Final = ["def _todo() -> _t.Any:",
                '    """A function of the design that could not be named: write it."""',
                '    raise NotImplementedError("a function of the design: write it")', "", ""]


def _stored_as(fmt: str) -> str:
    """The code of a time's stored format: ``_d.StoredAs.ISO_Z``, ``_d.StoredAs('%Y')``."""
    return (f"_d.StoredAs({fmt!r})" if "%" in fmt  # (a named one: StoredAs.ISO_Z...)
            else f"_d.StoredAs.{fmt.upper().replace('-', '_')}")


def identifier(name: str, taken: Sequence[str] = ()) -> str:
    """``name`` as a Python identifier that is no keyword, no pydantic model member and
    not in ``taken``, and that pydantic takes as a field (invalid characters become
    ``_``; a leading ``_`` is dropped; a leading digit or ``model_`` gets an ``f``)."""
    out = re.sub(r"[^A-Za-z0-9_]", "_", name).lstrip("_") or "field"
    if out[0].isdigit() or out.startswith("model_"):  # (a model_ name: pydantic's own)
        out = f"f{out}"
    while keyword.iskeyword(out) or out in taken:  # (each turn a new name: it ends)
        out += "_"
    return out


class _Writer:
    """The lines of one module, and the imports they need."""

    def __init__(self, taken: set[str], check: bool = False):
        self.check = check  # (functions stubbed: nothing the file names is imported)
        self.taken = taken  # (the names the design defines: a builtin of one is qualified)
        self.imports: dict[str, str] = {}  # alias -> its import line
        self.body: list[str] = []
        self.models: dict[str, list[str]] = {}  # nested model class -> its lines
        self.todo = False  # whether a function of the design could not be named
        self.classes: list[str] = []  # the entity classes written

    def q(self, text: str) -> str:
        """``text`` (a qualified name or an expression starting with one) with its alias
        imported, or its builtin qualified when the design takes the builtin's name."""
        head = text.partition(".")[0].partition("(")[0]
        if head in _ALIASES:
            self.imports[head] = f"import {_ALIASES[head]} as {head}"
        elif head in self.taken:
            self.imports["_b"] = "import builtins as _b"
            return f"_b.{text}"
        return text

    def reference(self, qualified: str) -> str:
        """A function the model names ``module:qualname`` (a builtin: ``qualname``) as
        an expression, its module imported under an alias of its own; one that cannot be
        named (a lambda) or is not a name at all: a stub that raises until written."""
        if self.check:
            return "lambda *args: None"
        if not named(qualified):
            self.todo = True
            return "lambda *args: _todo()"
        module, _, name = qualified.rpartition(":")
        if not module:
            return self.q(name)
        head, dot, rest = name.partition(".")
        call = head.partition("(")
        line = f"from {module} import {call[0]} as "
        alias = f"_{call[0]}"
        if alias in (*_ALIASES, "_todo") or self.imports.get(alias, line + alias) != (
                line + alias):
            alias = f"_{module.replace('.', '_')}_{call[0]}"
        self.imports[alias] = line + alias
        return alias + "".join(call[1:]) + dot + rest

    # -- types ---------------------------------------------------------------------------
    def annotation(self, desc: Mapping[str, Any]) -> str:
        """The annotation of a model type description."""
        kind = desc["type"]
        if kind in _SCALARS:
            text = self.q(_SCALARS[kind])
        elif kind in ("list", "set"):
            text = f"{self.q(kind)}[{self.annotation(desc['items'])}]"
        elif kind == "map":
            text = f"{self.q('dict')}[{self.q('str')}, {self.annotation(desc['values'])}]"
        elif kind == "enum":
            text = f"{self.q('_t.Literal')}[{', '.join(map(repr, desc['values']))}]"
        elif kind == "union":
            text = " | ".join(self.annotation(d) for d in desc["of"])
        else:  # an object: a nested model of its own (without fields: one around it)
            text = identifier(desc["model"]) if "fields" not in desc else self.nested(
                desc["model"], desc["fields"])
        if desc.get("vector") is not None:
            text = f"{self.q('_t.Annotated')}[{text}, _d.Vector({desc['vector']})]"
        if desc.get("stored_as") is not None:
            text = f"{self.q('_t.Annotated')}[{text}, {_stored_as(desc['stored_as'])}]"
        return text

    def nested(self, name: str, fields: Sequence[Mapping[str, Any]]) -> str:
        """The class name of a nested model (one class per name and shape: the model
        names a class by its name, so two shapes or an entity of one name are refused)."""
        lines = [line for f in fields for line in self.field(f)] or ["pass"]
        cls = identifier(name)
        source = [f"class {cls}({self.q('_p.BaseModel')}):", *(f"    {line}" for line in lines)]
        if self.models.get(cls, source) != source or cls in self.classes:
            raise _clash(name)
        self.models[cls] = source
        return cls

    # -- fields --------------------------------------------------------------------------
    def field(self, f: Mapping[str, Any]) -> list[str]:
        """The line declaring one field."""
        text = self.annotation(f)
        if f.get("compressed") is not None:
            text = (f"{self.q('_t.Annotated')}[{text}, "
                    f"_d.Compressed(min_size={int(f['compressed'])})]")
        if f.get("offloaded"):
            text = f"_d.Offloaded[{text}]"
        if f.get("encrypted"):
            text = f"_d.Encrypted[{text}]"
        if f.get("nullable"):
            text = f"{text} | None"
        options = []
        if f.get("stored", f["name"]) != f["name"]:
            options.append(f"alias={f['stored']!r}")
        if f.get("excluded"):
            options.append("exclude=True")
        default = self.default(f)
        factory = default is not None and default.startswith("default_factory=")
        if default is not None and not (options or factory):
            return [f"{f['name']}: {text} = {default}"]
        if default is not None:
            options.insert(0, default if factory else f"default={default}")
        if options:
            return [f"{f['name']}: {text} = {self.q('_p.Field')}({', '.join(options)})"]
        return [f"{f['name']}: {text}"]

    def default(self, f: Mapping[str, Any]) -> str | None:
        """A field's default as source (``default_factory=...`` for a factory), or
        ``None`` for a required field."""
        if f.get("required", True):
            return None
        if "default_factory" in f:
            return f"default_factory={self.reference(f['default_factory'])}"
        if "default_repr" in f:  # (a Python literal: the reader made sure)
            return self.literal(ast.literal_eval(f["default_repr"]))
        value, kind = f.get("default"), f["type"]
        if isinstance(value, str) and kind in _PARSED:
            return f"{self.q(_PARSED[kind])}({value!r})"
        if isinstance(value, dict) and value and kind == "object":
            return f"{self.nested(f['model'], f['fields'])}(**{self.literal(value)})"
        if isinstance(value, list | dict) and not value:
            return "default_factory=" + self.q("dict" if isinstance(value, dict) else
                                               "set" if kind == "set" else "list")
        if isinstance(value, list) and kind == "set" and all(
                isinstance(v, str | int | float | bool) for v in value):
            value = set(value)  # (pydantic copies a mutable default for each object)
        return self.literal(value)

    def literal(self, value: Any) -> str:
        """``value`` (plain data) as source: ``repr``, but a float that is not finite is
        ``float('nan')``, ``float('inf')`` at any depth."""
        if isinstance(value, float) and not math.isfinite(value):
            return f"{self.q('float')}({str(value)!r})"
        if isinstance(value, list | tuple | set) and value:
            items = [self.literal(v) for v in value]
            if isinstance(value, list):
                return f"[{', '.join(items)}]"
            return f"({items[0]},)" if len(items) == 1 and isinstance(value, tuple) else (
                f"({', '.join(items)})" if isinstance(value, tuple) else f"{{{', '.join(items)}}}")
        if isinstance(value, dict) and value:
            return "{" + ", ".join(f"{self.literal(k)}: {self.literal(v)}"
                                   for k, v in value.items()) + "}"
        return repr(value)


def _table(w: _Writer, var: str, table: Mapping[str, Any]) -> None:
    args = _table_args(w, table)
    line = f"{var} = _d.Table({', '.join(args)})"
    if len(line) <= 100:
        w.body.append(line)
        return
    w.body.append(f"{var} = _d.Table(")
    for arg in args:
        name, _, items = arg.partition("=[")
        if items:
            w.body += [f"    {name}=[", *(f"        {i}," for i in _split(items[:-1])), "    ],"]
        else:
            w.body.append(f"    {arg},")
    w.body.append(")")


def _table_args(w: _Writer, table: Mapping[str, Any]) -> list[str]:
    """The arguments of the table's ``_d.Table(...)``: its name, what differs from the
    defaults, key types, settings, indexes and vector indexes."""
    args = [repr(table["name"])]
    for key, default in _TABLE_DEFAULTS.items():
        if table.get(key, default) != default:
            args.append(f"{key}={table.get(key)!r}")
    if table.get("key_types"):
        args.append(f"key_types={dict(table['key_types'])!r}")
    if table.get("receipts_ttl") not in (None, 7 * 86400):  # (issue 60: 7 days unless said)
        args.append(f"receipts_ttl={w.q('_dt.timedelta')}(seconds={table['receipts_ttl']!r})")
    for key, value in (table.get("settings") or {}).items():  # (operational settings)
        if value not in (None, {}):
            args.append(f"{key}={tuple(value) if isinstance(value, list) else value!r}")
    plain = [i for i in table.get("indexes", ()) if i["kind"] != "vector"]
    vectors = [i for i in table.get("indexes", ()) if i["kind"] == "vector"]
    if plain:
        args.append("indexes=[" + ", ".join(_index(i) for i in plain) + "]")
    if vectors:
        args.append("vector_indexes=[" + ", ".join(_vector(i) for i in vectors) + "]")
    return args


def _split(items: str) -> list[str]:
    """The top-level items of a comma-separated list of calls."""
    out, depth, start = [], 0, 0
    for i, c in enumerate(items):
        depth += (c in "([{") - (c in ")]}")
        if c == "," and depth == 0:
            out.append(items[start:i].strip())
            start = i + 1
    return [*out, items[start:].strip()]


def _projection(index: Mapping[str, Any]) -> str:
    projection = index.get("projection", "ALL")
    if projection == "ALL":
        return ""
    return f", projection={projection if isinstance(projection, str) else tuple(projection)!r}"


def _index(index: Mapping[str, Any]) -> str:
    if index["kind"] == "lsi":
        return f"_d.LSI({index['name']!r}, sk={index['sk'][0]!r}{_projection(index)})"
    pk, sk = list(index["pk"]), list(index.get("sk") or ())
    if index.get("native"):
        keys = f"pk={tuple(pk)!r}" + (f", sk={tuple(sk)!r}" if sk else "")
    else:
        keys = f"pk={pk[0]!r}" + (f", sk={sk[0]!r}" if sk else "")
    pairs = "".join(f", {k}={tuple(index[k])!r}" for k in ("warm_throughput", "max_on_demand")
                    if index.get(k))
    return f"_d.GSI({index['name']!r}, {keys}{_projection(index)}{pairs})"


def _vector(index: Mapping[str, Any]) -> str:
    extra = f", partition={index['partition']!r}" if index.get("partition") else ""
    if index.get("filters"):
        extra += f", filters={tuple(index['filters'])!r}"
    return (f"_d.VectorIndex({index['name']!r}, attribute={index['attribute']!r}, "
            f"dimensions={index['dimensions']!r}, distance={index['distance']!r}"
            f"{extra}{_projection(index)})")


def _meta(w: _Writer, var: str, e: Mapping[str, Any]) -> Iterator[str]:
    yield "    class Meta:"
    yield f"        table = {var}"
    if e.get("type_name", e["name"]) != e["name"]:
        yield f"        type_name = {e['type_name']!r}"
    yield f"        pk = {e['pk']!r}"
    if e.get("sk") is not None:
        yield f"        sk = {e['sk']!r}"
    if e.get("indexes"):
        yield "        indexes = {" + ", ".join(
            f"{i['name']!r}: ({i['pk']!r}, {i.get('sk')!r})" for i in e["indexes"]) + "}"
    yield from _meta_rules(w, e)


def _meta_rules(w: _Writer, e: Mapping[str, Any]) -> Iterator[str]:
    """The lines of an entity's ``Meta`` that declare its rules (those past its keys)."""
    if e.get("unique"):
        yield f"        unique = ({''.join(f'{_unique(w, u)}, ' for u in e['unique'])})"
    if e.get("versioned"):
        yield "        versioned = True"
    if e.get("history_index"):
        yield f"        history_index = {e['history_index']!r}"
    stamps = e.get("timestamps") or {}
    if stamps.get("created") or stamps.get("updated"):
        yield f"        timestamps = ({stamps.get('created')!r}, {stamps.get('updated')!r})"
    if e.get("key_only"):
        yield f"        key_only = {tuple(e['key_only'])!r}"
    if e.get("shards"):
        unknown = any(s.get("unknown") for s in e["shards"].values())
        yield "        shards = {" + ", ".join(
            f"{t!r}: {_shards(w, s)}" for t, s in e["shards"].items()) + "}" + (
            "  # the file keeps no shard count: set it" if unknown else "")
    if e.get("overlaps", "literal") != "literal":
        yield f"        overlaps = {e['overlaps']!r}"
    if e.get("previous"):
        yield f"        previous = {_previous(e)}"
    if e.get("lock"):
        yield f"        lock = _d.Lock(**{e['lock']!r})"


def _unique(w: _Writer, u: Mapping[str, Any]) -> str:
    options = []
    if u.get("prefix") not in (None, u["field"]):
        options.append(f"prefix={u['prefix']!r}")
    if u.get("normalize"):
        options.append(f"normalize={w.reference(u['normalize'])}")
    if u.get("scope"):
        options.append(f"scope={u['scope']!r}")
    if not options:
        return repr(u["field"])
    return f"_d.Unique({u['field']!r}, {', '.join(options)})"


def _shards(w: _Writer, s: Mapping[str, Any]) -> str:
    by, first = s.get("by"), s.get("first") or 0
    if by is None and not first:
        return str(s["count"])
    args = [str(s["count"])]
    if by is not None:
        args.append(f"by={w.reference(by) if ':' in by or by == '<lambda>' else repr(by)}")
    if first:
        args.append(f"first={first}")
    return f"_d.Shards({', '.join(args)})"


def _previous(e: Mapping[str, Any]) -> str:
    old = e["previous"]
    args = [f"{k}={old[k]!r}" for k in ("pk", "sk", "type_name")
            if old.get(k) is not None and old.get(k) != e.get(k if k != "type_name" else
                                                                "type_name", e["name"])]
    if old.get("stored_names"):
        args.append(f"stored_names={dict(old['stored_names'])!r}")
    return f"_d.Previous({', '.join(args)})"


def _entity(w: _Writer, var: str, e: Mapping[str, Any]) -> list[str]:
    lines = [f"class {e['name']}(_d.Entity):", *_meta(w, var, e), ""]
    lines += [f"    {line}" for f in e.get("fields", ()) for line in w.field(f)]
    return lines


def _pattern(var: str, e: Mapping[str, Any], p: Mapping[str, Any]) -> str:
    params = "".join(
        f", ({q['name']!r}, {q['type']!r}" + (f", {q['entity_type']!r}" if q.get("entity_type")
                                               else "") + ")" for q in p.get("parameters", ()))
    options = "".join(f", {k}={p[k]!r}" for k in ("index", "range_condition", "returns",
                                                  "description", "pattern_id")
                      if p.get(k) not in (None, ""))
    return f"{var}.pattern({p['name']!r}, {e['name']}, {p['operation']!r}{params}{options})"


def _names(models: Sequence[Mapping[str, Any]]) -> set[str]:
    """Every name a design defines: its entities, nested models and fields (of any
    depth), as the code could bind them."""
    out: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, Mapping):
            out.update(str(value[k]) for k in ("name", "model") if isinstance(value.get(k), str))
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk([m.get("entities", ()) for m in models])
    return out


def code_of(models: Sequence[Mapping[str, Any]], check: bool = False) -> str:
    """The Python module defining every table of ``models`` (each a model's data), with
    its entities and declared access patterns (``check``: with every function the models
    name stubbed, nothing imported for them: code to define, to see dynaorm take it)."""
    w = _Writer(_names(models), check)
    names: list[str] = []
    for model in models:
        table = model["table"]
        var = identifier(str(table["name"]).lower(), [*names, *w.taken, *_BUILTINS])
        names.append(var)
        _table(w, var, table)
        w.body.append("")
        entities = []
        for e in model.get("entities", ()):
            entities.append({**e, "name": identifier(e["name"])})
            if entities[-1]["name"] in (*w.classes, *w.models):
                raise _clash(e["name"])
            w.classes.append(entities[-1]["name"])
            w.body += ["", *_entity(w, var, entities[-1]), ""]
        patterns = [(e, p) for e in entities
                    if e.get("patterns") == "declared" for p in e.get("access_patterns", ())]
        if patterns:
            w.body += ["", *(_pattern(var, e, p) for e, p in patterns)]
        w.body.append("")
    nested = [line for source in w.models.values() for line in (*source, "", "")]
    if w.todo:
        w.q("_t.Any")
        nested += _TODO
    tables = ", ".join(repr(m["table"]["name"]) for m in models).replace('"', '\\"')
    head = [f'"""Entities of {tables}, written by `dynaorm model --import`."""', ""]
    w.q("_d.Table")
    head += [*sorted(w.imports.values(), key=lambda line: line.split()[1]), "", ""]
    return "\n".join(head + nested + w.body).rstrip() + "\n"


def _clash(name: str) -> ModelFileError:
    return ModelFileError(f"two classes are named {name!r} (as Python names them): the model "
                          "tells classes apart by name, so code defines one of a name", place="$")


# -- import ----------------------------------------------------------------------------------
def import_code(text: str, fmt: str = "json") -> str:
    """Entity code for the models a file of format ``fmt`` describes (see
    :func:`~code_of`), checked by defining what it defines: a design
    dynaorm refuses is a :class:`~dynaorm.ModelFileError` at the entity's place. A table
    whose entities a file tells apart by nothing but key shapes that overlap (a Workbench
    model of generic ``PK``/``SK`` facets) gets dynaorm's type attribute, ``_type``."""
    models = read(text, fmt)
    places = {e["name"]: e.pop("_place") for m in models for e in m["entities"]}
    try:
        _define(code_of(models, check=True))  # (the functions it names not imported)
    except ModelFileError as exc:
        untyped = [m for m in models if m["table"]["type_attribute"] is None]
        if "no type attribute" not in str(exc) or not untyped:
            raise _placed(exc, places) from exc.__cause__
        for model in untyped:
            model["table"]["type_attribute"] = "_type"
        try:
            _define(code_of(models, check=True))
        except ModelFileError as again:
            raise _placed(again, places) from again.__cause__
    return code_of(models)


def _define(code: str) -> None:
    """Define what ``code`` (:func:`code_of` with ``check``) defines, in a module of its
    own, once :func:`_only_definitions` has found nothing in it but definitions, and with
    no builtins but the types it names; a refusal is a :class:`~dynaorm.ModelFileError`
    (placed by :func:`_placed`)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:  # (too deep)
        raise ModelFileError(f"dynaorm refuses the design: {exc}", place="$") from exc
    _only_definitions(tree)
    module = types.ModuleType("dynaorm_imported_model")
    module.__dict__["__builtins__"] = {
        "__build_class__": builtins.__build_class__, "__import__": _import,
        **{name: getattr(builtins, name) for name in _CODE_BUILTINS}}
    sys.modules[module.__name__] = module
    try:
        exec(compile(tree, "<dynaorm model --import>", "exec"), module.__dict__)
    except Exception as exc:  # (any error of defining it: the file's, not Python's)
        raise ModelFileError(f"dynaorm refuses the design: {exc}", place="$") from exc
    finally:
        del sys.modules[module.__name__]


#: the builtins the code :func:`code_of` writes names (annotations, ``float('nan')``,
#: ``bytes.fromhex``): the only builtins the check defines it with
_CODE_BUILTINS: Final = ("bool", "bytes", "dict", "float", "frozenset", "int", "list", "set",
                         "str", "tuple")
#: what a module of checked code may hold at its top: its docstring, then these
_TOP: Final = (ast.Import, ast.ClassDef, ast.Assign, ast.Expr)
#: what no part of checked code holds (a definition is a class, an assignment, a call)
_NEVER: Final = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Global, ast.Nonlocal, ast.Await,
                 ast.Yield, ast.YieldFrom, ast.NamedExpr, ast.ListComp, ast.SetComp,
                 ast.DictComp, ast.GeneratorExp, ast.ImportFrom, ast.Delete, ast.For,
                 ast.While, ast.With, ast.Try, ast.If, ast.Raise, ast.Assert)


def _import(name: str, *args: Any, **kwargs: Any) -> types.ModuleType:
    """``__import__`` of checked code: the modules of :data:`_ALIASES` only."""
    if name not in _ALIASES.values():
        raise ImportError(f"checked code imports {name!r}")
    return importlib.import_module(name)


def _only_definitions(tree: ast.Module) -> None:
    """Refuse (:class:`~dynaorm.ModelFileError`) checked code holding anything but what
    :func:`code_of` writes: imports of :data:`_ALIASES`, classes, assignments and
    ``table.pattern(...)`` calls, naming only those aliases, what it defines, the
    stubs' ``args`` and :data:`_CODE_BUILTINS`, and no attribute starting with ``_``. So
    no text of a file can reach a name that runs code, whatever the writer missed."""
    docstring, *body = tree.body
    defined = {n.name for n in body if isinstance(n, ast.ClassDef)} | {
        t.id for n in body if isinstance(n, ast.Assign) for t in n.targets
        if isinstance(t, ast.Name)}
    names = {*_ALIASES, *defined, *_CODE_BUILTINS, "args"}
    bad: list[ast.AST] = [n for n in body if _foreign_statement(n)]
    bad += [n for n in ast.walk(ast.Module([*body], [])) if _foreign_node(n, names)]
    if not (isinstance(docstring, ast.Expr) and isinstance(docstring.value, ast.Constant)):
        bad.insert(0, docstring)
    if bad:
        raise ModelFileError(f"the code written would run {ast.unparse(bad[0])[:80]!r}, not "
                             "only define", place="$")



def _foreign_statement(node: ast.stmt) -> bool:
    """Whether a top-level statement is none :func:`code_of` writes: an import of other
    than :data:`_ALIASES`, or an expression other than a ``.pattern(...)`` call."""
    if not isinstance(node, _TOP):
        return True
    if isinstance(node, ast.Import):
        return any(_ALIASES.get(a.asname or "") != a.name for a in node.names)
    if isinstance(node, ast.Expr):
        return not (isinstance(node.value, ast.Call)
                    and isinstance(node.value.func, ast.Attribute)
                    and node.value.func.attr == "pattern")
    return False


def _foreign_node(node: ast.AST, names: set[str]) -> bool:
    """Whether a node anywhere in the code reaches beyond definitions: one of
    :data:`_NEVER`, a loaded name not in ``names``, a private attribute, or a ``_b``
    builtin not in :data:`_CODE_BUILTINS`."""
    if isinstance(node, _NEVER):
        return True
    if isinstance(node, ast.Name):
        return isinstance(node.ctx, ast.Load) and node.id not in names
    if isinstance(node, ast.Attribute):
        return node.attr.startswith("_") or (
            isinstance(node.value, ast.Name) and node.value.id == "_b"
            and node.attr not in _CODE_BUILTINS)
    return False

def _placed(exc: ModelFileError, places: Mapping[str, str]) -> ModelFileError:
    """``exc`` at the place of the entity its message names (the longest name found)."""
    message = str(exc).partition(": ")[2]
    found = max((n for n in places if re.search(rf"\b{re.escape(n)}\b", message)), key=len,
                default=None)
    return ModelFileError(message, place=places[found] if found else "$")
