"""``docs/architecture.md`` says what the code is, and stays so (issue 80: 6 of its 34
checked statements were false after 0.8): its floors picture is the layers contract, the
contract it quotes is ``pyproject.toml``'s, its module tables name every module of
``dynaorm/`` and only modules that exist, the names it gives in backticks are defined in
the project (or named in :data:`FOREIGN`: DynamoDB's, a library's, an example's), and the
counts it states (contracts, caches, memos, the token ratchet) are the code's. The figures
of the traced paths are ``test_budgets.py``'s."""

from __future__ import annotations

import ast
import functools
import importlib.util
import re
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
_SPEC = importlib.util.spec_from_file_location("code_size", ROOT / "scripts" / "code_size.py")
assert _SPEC is not None and _SPEC.loader is not None
code_size = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(code_size)
DOC = (ROOT / "docs" / "architecture.md").read_text()
#: the doc without its code blocks (names there are code, checked by running it elsewhere)
PROSE = re.sub(r"```.*?```", "", DOC, flags=re.S)
NUMBERS = {w: n for n, w in enumerate((
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
    "nineteen", "twenty"))}

#: names the doc gives that no module of the project defines: DynamoDB's API and its
#: attributes, botocore's, pydantic's, pyiceberg's, OpenTelemetry's and Python's own,
#: the example data of the paths it walks, and commits
FOREIGN = frozenset({
    # DynamoDB's operations, request and answer members, and attribute tags
    "TransactWriteItems", "PutItem", "UpdateItem", "DeleteItem", "ClientRequestToken",
    "ConsumedCapacity", "BatchGetItem", "BatchWriteItem", "TransactGetItems",
    "SearchVectors", "TableName", "ReturnConsumedCapacity", "INDEXES", "Limit", "Items",
    "LastEvaluatedKey", "ALL_NEW", "attribute_not_exists", "N", "B", "POST",
    # botocore's, urllib3's, pydantic's, pyiceberg's, OpenTelemetry's, Python's
    "Config", "_user_provided_options", "put_item", "transact_write_items",
    "AWS_MAX_ATTEMPTS", "ProxyManager", "AliasPath", "validate_json",
    "create_table_if_not_exists", "commit_transaction", "INTERNAL", "CLIENT",
    "_TRACER_PROVIDER", "_METER_PROVIDER", "_SUPPRESS_INSTRUMENTATION_KEY", "_instance",
    "setprofile", "lru_cache", "pyarrow", "yield", "None", "TypeError", "ValueError",
    "BaseException", "ResourceWarning", "concurrent", "sync_only",
    # the example data of the paths the doc walks (their entities are the benchmarks')
    "r25", "account", "v0_PROFILE", "v00000001_PROFILE", "Doc", "_rev",
    # release commits, and a test module named by its file
    "b520a72", "e595e82", "_something_p",
    # what 0.6 removed (the doc tells its history)
    "plan_delete",
})


#: every Python file of the project and its text (7 MB: parsing it all took some 20 s of
#: CPU, so a file is parsed only when its text holds a name asked about)
SOURCES = {path: path.read_text()
           for folder in ("dynaorm", "tests", "benchmarks", "scripts", "examples")
           for path in (ROOT / folder).rglob("*.py")}


@functools.cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(SOURCES[path])


@functools.cache
def _names_in(path: Path) -> frozenset[str]:
    """The names one file defines (functions, classes, assignments, attributes set,
    parameters, imports, string constants)."""
    names: set[str] = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Name | ast.arg):
            names.add(node.id if isinstance(node, ast.Name) else node.arg)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[-1])
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names.add(node.value)  # (a cache's name, a marker's)
    return frozenset(names)


#: each word of the project's Python, the files whose text holds it
FILES_OF: dict[str, set[Path]] = {}
for _path, _text in SOURCES.items():
    for _word in set(re.findall(r"\w+", _text)):
        FILES_OF.setdefault(_word, set()).add(_path)


def _defined(name: str) -> bool:
    """Whether the project's Python defines ``name`` (see ``_names_in``) or names a module
    so; only the files whose text holds its words are parsed (no other can define it)."""
    words = [FILES_OF.get(word, set()) for word in name.split(".")]
    holding = sorted(set.intersection(*words), key=lambda path: len(SOURCES[path]))
    return any(path.stem == name for path in SOURCES) or any(
        name in _names_in(path) for path in holding)  # (the smallest first: parsing costs)


def _contracts() -> list[dict[str, Any]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts: list[dict[str, Any]] = config["tool"]["importlinter"]["contracts"]
    return contracts


def _floors(layers: list[str]) -> list[set[str]]:
    return [{n.strip(" ()") for n in floor.split("|")} for floor in layers]


def picture_floors(doc: str) -> list[set[str]]:
    """The floors the picture draws, top first: each the names of its first column
    (``cli/`` -> ``cli``, ``pynamodb.py`` -> ``pynamodb``), a floor's names running on
    over a line that ends or starts with ``|``."""
    text = re.search(r"## The floors\n.*?```text\n(.*?)```", doc, re.S)
    assert text, "the floors picture is gone"
    floors: list[list[str]] = []
    joined = False
    for line in text.group(1).splitlines():
        inner = line.strip()
        if not inner.startswith("|") or set(inner) <= set("+-=| "):
            joined = False
            continue
        content = inner[1:-1]  # (between the box's walls)
        names = "" if content.startswith("   ") else re.split(r"\s{2,}", content.strip())[0]
        if not names:
            continue
        if joined or names.startswith("|"):
            floors[-1].append(names)
        else:
            floors.append([names])
        joined = names.endswith("|")
    return [{n.strip().removesuffix("/").removesuffix(".py") for n in " ".join(f).split("|")
             if n.strip()} for f in floors]


def test_the_floors_picture_is_the_layers_contract() -> None:
    layers = next(c for c in _contracts() if c["type"] == "layers")["layers"]
    assert picture_floors(DOC) == _floors(layers)
    quoted = re.search(r"```toml\n(.*?)```", DOC, re.S)
    assert quoted, "the doc quotes the layers contract"
    assert tomllib.loads(quoted.group(1))["tool"]["importlinter"]["contracts"][0][
        "layers"] == layers


def test_the_picture_reader_joins_a_floors_names_and_skips_descriptions() -> None:
    doc = ("## The floors\n```text\n +----+\n |  a | b |     words     edge  |\n"
           " |  c/                 more words        |\n |                     on  |\n"
           " |  d.py               x                 |\n |  | e               y |\n"
           " +====+\n |  f | g      leaves  |\n```\n")
    assert picture_floors(doc) == [{"a", "b", "c"}, {"d", "e"}, {"f", "g"}]


def _module_tables(doc: str) -> list[tuple[str, list[str]]]:
    """Each module table's package (from its section's heading: ``protocol/``, or ``""``
    for the package's top) and the names of its first column, as written."""
    found = []
    for section in re.split(r"\n(?=#{2,3} )", doc):
        heading = section.split("\n", 1)[0]
        named = re.findall(r"`([^`]+)`", heading)
        package = named[0][:-1] if len(named) == 1 and named[0].endswith("/") else ""
        rows = re.findall(r"^\| (`[^|]*`) \|", section, re.M)
        if re.search(r"^\| [Mm]odule \|", section, re.M) and rows:
            found.append((package, [n for row in rows for n in re.findall(r"`([^`]+)`", row)]))
    return found


def test_the_module_tables_name_every_module_and_only_modules_that_exist() -> None:
    named = set()
    for package, names in _module_tables(DOC):
        for name in names:
            path = ROOT / "dynaorm" / (name if "/" in name or not package else
                                       f"{package}/{name}")
            assert path.is_file() or (name.endswith("/") and path.is_dir()), (
                f"the doc names {name} ({path}), which does not exist")
            named |= set(path.rglob("*.py")) if path.is_dir() else {path}
    left = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "dynaorm").rglob("*.py")
                  if p not in named and not _docstring_alone(p))
    assert not left, f"modules no table of docs/architecture.md names: {left}"


def _docstring_alone(path: Path) -> bool:
    """Whether ``path`` is a package's face holding its docstring alone (no line of its
    own: its section's paragraph says it)."""
    body = ast.parse(path.read_text()).body
    return path.name == "__init__.py" and len(body) == 1 and isinstance(body[0], ast.Expr)


def test_the_names_the_doc_gives_are_defined() -> None:
    unknown = {}
    for found in re.finditer(r"`([A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*)(?:\([^`]*\))?`", PROSE):
        name = found.group(1)
        last = name.split(".")[-1]
        if last not in FOREIGN and last != "py" and not _defined(last) and not _defined(name):
            unknown.setdefault(name, PROSE[:found.start()].count("\n") + 1)
    assert not unknown, f"names the code does not define (name: line of the prose): {unknown}"


def test_the_paths_the_doc_gives_exist() -> None:
    """(``tools/`` is 0.8's, which the doc's history names; ``DIR/``, a placeholder.)"""
    missing = set()
    for name in re.findall(r"`([\w./-]+(?:\.py|/))`", PROSE):
        if name == "tools/" or name.startswith("DIR/"):
            continue
        if not any((where / name).exists() for where in (
                ROOT, ROOT / "dynaorm", *(p.parent for p in (ROOT / "dynaorm").rglob(
                    "__init__.py")))):
            missing.add(name)
    assert not missing, f"paths that do not exist: {sorted(missing)}"


def _number(word: str) -> int:
    return NUMBERS[word.lower()]


def test_the_counts_the_doc_states_are_the_codes() -> None:
    contracts = re.search(r"\((\w+) contracts in all\)", DOC)
    assert contracts and _number(contracts.group(1)) == len(_contracts())
    caches = re.search(r"empties them all \((\w+) today:\s*(.*?)\)\.", DOC, re.S)
    assert caches
    listed = re.findall(r"`([\w.]+)`", caches.group(2))
    cached = [p for p, text in SOURCES.items()  # (no other file can name a cache)
              if p.is_relative_to(ROOT / "dynaorm") and "cache" in text]
    declared = {node.args[0].value for path in cached for node in ast.walk(_tree(path))
                if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "cache"
                and node.args and isinstance(node.args[0], ast.Constant)}
    assert sorted(listed) == sorted(declared) and _number(caches.group(1)) == len(declared)
    memos = re.search(r"memos of fixed answers \((.*?)\) and the codec", DOC, re.S)
    assert memos
    named = {n for n in re.findall(r"`(\w+\.\w+)`", memos.group(1))
             if not n.startswith("functools.")}
    decorated = {f"{path.stem}.{node.name}" for path in cached
                 for node in ast.walk(_tree(path))
                 if isinstance(node, ast.FunctionDef) and any(
                     "cache" in ast.unparse(d) and "cached_property" not in ast.unparse(d)
                     for d in node.decorator_list)}
    assert named == decorated
    assert f"{code_size.LANDED:,} (`LANDED` today" in " ".join(DOC.split()), (
        "the ratchet the doc states")
