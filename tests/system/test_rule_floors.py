"""Phases name no rule (issue 58, contract 22 "Rules own their rows"): the modules of
``read/``, ``write/``, ``core/``, ``client/``, ``sync/`` and ``aio/`` ask an entity's rules
at fixed hook points (``spec.rules``) and never import a named rule module, and few of
their branches test a rule's flag.

The import rule itself is an import-linter contract (``make lint``); this module checks
that the contract names every rule module there is (a rule module added later is covered
by existing, not by remembering to list it), and counts the branches: an ``if``, a
conditional expression, a ``while`` or a comprehension's ``if`` whose test reads one of
:data:`FLAGS`, the copies of rule data an ``EntitySpec`` held in 0.6 (54 such branches by
the review's count, 48 by this one), or names a rule's state class (:data:`STATES`).
Issue 58's budget is :data:`BUDGET`, issue 69's 0; until it is met, :data:`LANDED` (the
count issue 69's first step landed at) is a ratchet the phases may not grow
past, as ``scripts/code_size.py``'s token ratchet is.
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "dynaorm"
#: the packages that run the phases (the phases, the unit of work, the client, sessions)
PHASES = ("read", "write", "core", "client", "sync", "aio")
#: the rule flags a phase's branch may test only within :data:`BUDGET`
FLAGS = frozenset({"versioned", "previous", "uniques", "history_index", "timestamps",
                   "ttl_field", "encrypted"})
#: the state classes of a rule a phase's branch may test only within :data:`BUDGET` (issue
#: 69: an object read from the previous layout)
STATES = frozenset({"MovedState"})
#: issue 58's budget: at most this many branches of the phases test a rule's flag (not met)
BUDGET = 10
#: the branches testing a rule's flag or state when issue 69's first step landed (0.6: 48;
#: 0.7: 8 flags and 6 tests of MovedState, 14; issue 69's later steps: 7, then 4: the two
#: update refusals one, a save's two reads one, and a save's and a delete's plans one, the
#: commit's choice of ``_plan_move``; then 2: the previous layout plans a save's and a
#: delete's move and refuses an update itself, ``spec.rules.before.save``/``delete``/
#: ``refuse``, left: a save's two reads and a versioned save's plan); then 0: the previous
#: layout reads its own rows (``spec.rules.before.stored_now``/``either``/``read``/
#: ``owner``, read/previous.py gone) and a versioned save's next version is its key
#: layout's (``spec.rules.sort_keys.next``). Issue 69's budget, met: a ratchet.
LANDED = 0
CONTRACT = "Phases name no rule"


def flag_branches(source: str) -> Iterator[tuple[int, str]]:
    """(line, flag) of each branch of ``source`` whose test reads a flag of :data:`FLAGS`
    (one per branch, the first flag its test reads)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.If | ast.IfExp | ast.While):
            tests = [node.test]
        elif isinstance(node, ast.comprehension):
            tests = list(node.ifs)
        else:
            continue
        for test in tests:
            flags = [a.attr for a in ast.walk(test)
                     if isinstance(a, ast.Attribute) and a.attr in FLAGS] + [
                         a.id for a in ast.walk(test) if isinstance(a, ast.Name)
                         and a.id in STATES]
            if flags:
                yield test.lineno, flags[0]


def phase_flag_branches() -> list[str]:
    """Every branch of the phase packages that tests a rule's flag, as ``path:line flag``."""
    return [f"{path.relative_to(ROOT)}:{line} {flag}"
            for phase in PHASES for path in sorted((PACKAGE / phase).rglob("*.py"))
            for line, flag in flag_branches(path.read_text())]


def test_few_branches_of_the_phases_test_a_rule_flag() -> None:
    found = phase_flag_branches()
    assert len(found) <= LANDED, (
        f"{len(found)} branches of {', '.join(PHASES)} test a rule's flag, past the ratchet "
        f"{LANDED} (budget {BUDGET}); ask the entity's rules at a hook instead:\n"
        + "\n".join(found))


def test_the_branch_count_sees_each_kind_of_branch() -> None:
    source = ("if spec.versioned:\n    pass\n"
              "x = 1 if spec.previous else 2\n"
              "while spec.uniques and go():\n    pass\n"
              "y = [r for r in rows if r.encrypted]\n"
              "if spec.plain or other.ttl_field:\n    pass\n"
              "z = spec.versioned\n"  # (a read, no branch)
              "if spec.name:\n    pass\n")  # (no flag)
    assert sorted(flag_branches(source)) == [(1, "versioned"), (3, "previous"),
                                             (4, "uniques"), (6, "encrypted"),
                                             (7, "ttl_field")]


def _contract() -> dict[str, object]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts = config["tool"]["importlinter"]["contracts"]
    found = [c for c in contracts if c["name"].startswith(CONTRACT)]
    assert len(found) == 1, f"pyproject.toml has no import-linter contract {CONTRACT!r}"
    return found[0]


def test_the_import_contract_forbids_every_rule_module_to_every_phase() -> None:
    contract = _contract()
    assert contract["type"] == "forbidden"
    assert sorted(contract["source_modules"]) == sorted(f"dynaorm.{p}" for p in PHASES)  # type: ignore[call-overload]
    rules = sorted(f"dynaorm.schema.rules.{p.stem}"
                   for p in (PACKAGE / "schema" / "rules").glob("*.py")
                   if p.stem != "__init__")
    assert sorted(contract["forbidden_modules"]) == rules, (  # type: ignore[call-overload]
        "the contract must name every module of dynaorm/schema/rules/ (a rule module "
        "added is forbidden to the phases by existing)")
