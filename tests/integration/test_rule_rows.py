"""Rules own their rows, on every engine (contract 22, "The model says every row"): the row
kinds ``table.model()`` lists for a versioned entity with unique values, taken from its
rules' ``rows`` hook, are the keys a save and an update of it actually write (the hook
itself, pure: ``tests/unit/test_rule_rows.py``)."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from dynaorm import (
    Compressed,
    ConcurrentModificationError,
    DynaormError,
    Encrypted,
    Entity,
    OutcomeUnknownError,
    Session,
    StaticKeyring,
    Table,
    UniqueConstraintError,
)
from dynaorm.testing import TestBackend, inject_faults, use_tables, worker_suffix
from tests.conftest import engine_of, wire_of
from tests.support.examples import examples
from tests.support.fault_kinds import KINDS
from tests.support.models import account_renamed, app


def _pattern(shape: str) -> re.Pattern[str]:
    """A key shape as a pattern: ``{field}`` any text, ``<n>`` a version number (1 and
    up, zero-padded: 0 is the latest copy's)."""
    parts = re.split(r"(\{[^}]*\}|<n>)", shape)
    return re.compile("".join(
        "0*[1-9][0-9]*" if p == "<n>" else ".+" if p.startswith("{") else re.escape(p)
        for p in parts) + "$")


def _kind_of(kinds: list[dict[str, Any]], key: dict[str, str]) -> list[str]:
    return [k["role"] for k in kinds
            if all(_pattern(shape).match(key.get(attr, "")) for attr, shape in k["key"].items())]


def test_the_row_kinds_of_the_model_are_the_keys_written(db: TestBackend) -> None:
    entity = next(e for e in app.model()["entities"] if e["name"] == "RowsAccount")
    kinds = entity["rows"]
    a, items = account_renamed(db)
    keys = [{"pk": i["pk"], "sk": i["sk"]} for i in items]
    roles = sorted(r for key in keys for r in _kind_of(kinds, key))
    # every row written is of exactly one kind, and every kind was written
    assert all(len(_kind_of(kinds, key)) == 1 for key in keys), keys
    assert roles == ["latest copy", "unique guard", "unique guard", "version row",
                     "version row"]
    rendered = {k["role"] + ":" + k["key"]["pk"].format(**a.__dict__) for k in kinds
                if "<n>" not in k["key"]["sk"]}
    assert {"latest copy:RACCOUNT#a1", "unique guard:username#bob",
            "unique guard:ORG#o1#mail#ann@x.com"} == rendered


# --- faulted commits with a second writer on DynamoDB Local; refusals
# (moved from system/test_rules_red_team.py:
# Red team of rules that own their rows (issue 58), on DynamoDB Local (the reference
# engine: a ``ClientRequestToken`` applied at most once): random sequences of saves, handle
# changes, updates by key and deletes of a versioned entity with a unique field (guards
# built by the unique rule's ``rows``, version rows by the versioned rule's) and ``Compressed`` /
# ``Encrypted[Compressed]`` fields, each commit drawn a fault (a throttle, a 500, a lost
# answer) and, inside the window of a 500 or a lost answer, a second writer claiming the
# same handle or another. Checked against a model after every step:
#
# - a commit told it succeeded applied; told it failed (not ``OutcomeUnknownError``) left
#   the table exactly as it was; unknown: the table holds the before or the after, whole;
# - never two owners of a handle, one guard per held handle naming its owner, ``find``
#   agreeing, history's versions 1..n, every compressed and sealed value read back as its
#   writer wrote it (get, query, history).
#
# Also: a versioned entity's ``version`` declared ``Encrypted`` (a defect outside
# ``Compressed``: xfail, strict).)

KEY = b"k" * 32
club = Table("red_club", keyring=StaticKeyring(KEY, mac_key=KEY))


class Member(Entity):
    class Meta:
        table = club
        pk = "MEM#{mid}"
        sk = "MEM"
        versioned = True
        unique = ["handle"]

    mid: str
    handle: str
    bio: Compressed[str] = ""
    secret: Encrypted[Compressed[str]] = ""
    version: int = 0


@pytest.fixture
def local(backend: str | None, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    if engine_of(request) != "local":
        pytest.skip("the reference engine: DynamoDB Local (tokens applied at most once)")
    with use_tables(club, endpoint_url=backend, name_suffix=worker_suffix(),
                    wire=wire_of(request)) as tb:
        before = club.binding()
        club.max_wait = 0  # faults are retried without waiting
        yield tb
        club.restore(before)


_runs = itertools.count()
SIZES = (0, 255, 256, 3000)
step = st.tuples(st.sampled_from(["save", "save", "update", "delete"]), st.integers(0, 2),
                 st.integers(0, 3), st.sampled_from(SIZES), st.sampled_from(KINDS),
                 st.sampled_from(["none", "same", "other"]))


def _text(n: int, tag: str) -> str:
    return (tag + "\u00e9" + "x" * n)[:max(n, 1)] if n else ""


def _get(mid: str) -> Member | None:
    return Session(club).get(Member, mid=mid, consistent=True)


def _view(m: Member | None) -> tuple[Any, ...] | None:
    return None if m is None else (m.handle, m.bio, m.secret, m.version)


def _commit(work: Any) -> BaseException | None:
    s = Session(club)
    work(s)
    try:
        s.commit()
    except DynaormError as exc:
        s.rollback()
        return exc
    return None


def _check(tb: TestBackend, run: str, model: dict[str, tuple[Any, ...] | None]) -> None:
    s = Session(club)
    live = {mid: v for mid, v in model.items() if v is not None}
    for mid, want in model.items():
        assert _view(_get(mid)) == want, (mid, want)
    handles = [v[0] for v in live.values()]
    assert len(handles) == len(set(handles)), f"two owners: {live}"
    for mid, (handle, _bio, _secret, version) in live.items():
        found = s.find(Member, handle=handle)
        assert found is not None and found.mid == mid
        assert [m.version for m in s.history(Member, mid=mid)] == list(range(1, version + 1))
        assert s.query(Member, mid=mid).values("bio", "secret") == [
            {"bio": live[mid][1], "secret": live[mid][2]}]
    guards = [i for i in tb.scan_raw() if i.get("_type", {}).get("S") == "dynaorm:unique"
              and i["owner_pk"]["S"].startswith(f"MEM#{run}")]
    assert sorted(g["owner_pk"]["S"] for g in guards) == sorted(f"MEM#{m}" for m in live)


@pytest.mark.sync_only
@pytest.mark.engines('local')
@settings(max_examples=examples(50), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(steps=st.lists(step, min_size=1, max_size=6))
def test_faulted_commits_with_a_second_writer_never_lie_nor_leave_half(
        local: TestBackend, steps: list[tuple[Any, ...]]) -> None:
    run = f"r{next(_runs)}-"
    model: dict[str, tuple[Any, ...] | None] = {}
    for n, (op, who, h, size, kind, window) in enumerate(steps):
        mid, handle = f"{run}m{who}", f"{run}h{h}"
        before = dict(model)
        current = model.get(mid)
        after: tuple[Any, ...] | None
        if op == "delete":
            if current is None:
                continue
            after = None

            def work(s: Session, mid: str = mid) -> None:
                s.delete(_get(mid), history=True)  # type: ignore[arg-type]
        elif op == "update":  # (by key: a versioned entity's is planned as a save)
            if current is None:
                continue
            bio, secret = _text(size, f"u{n}"), _text(SIZES[-1 - SIZES.index(size)], f"t{n}")
            after = (current[0], bio, secret, current[3] + 1)

            def work(s: Session, mid: str = mid, bio: str = bio, secret: str = secret) -> None:
                s.update(Member, mid=mid).set(bio=bio, secret=secret)
        else:
            bio, secret = _text(size, f"b{n}"), _text(SIZES[-1 - SIZES.index(size)], f"s{n}")
            after = (handle, bio, secret, (current[3] if current else 0) + 1)

            def work(s: Session, mid: str = mid, handle: str = handle, bio: str = bio,
                     secret: str = secret) -> None:
                obj = _get(mid) or Member(mid=mid, handle=handle)
                obj.handle, obj.bio, obj.secret = handle, bio, secret
                s.save(obj)
        told: dict[str, Any] = {}
        other = f"{run}w{n}"

        def act(other: str = other, handle: str = handle, window: str = window,
                n: int = n, told: dict[str, Any] = told) -> None:
            if window == "none":
                return
            claim = handle if window == "same" else f"{run}h9{n}"
            told["before"] = {k: _view(_get(k)) for k in model}
            told["error"] = _commit(lambda s: s.save(Member(mid=other, handle=claim,
                                                            bio="w" * 300)))
            told["claim"] = claim

        with inject_faults(club) as faults:
            if kind == "throttle":
                faults.throttle("TransactWriteItems")
            elif kind == "500":
                faults.server_error("TransactWriteItems", after=act)
            elif kind in ("lose", "lose500"):
                faults.lose_answer("TransactWriteItems", after=act,
                                   how="500" if kind == "lose500" else "timeout")
            error = _commit(work)
        event(f"{op} {kind}/{window}: {type(error).__name__}, window {'claim' in told}")
        if "claim" in told:  # the window writer's own answer is true
            got = _get(other)
            if told["error"] is None:
                assert got is not None and got.handle == told["claim"]
                model[other] = _view(got)
            else:
                assert isinstance(told["error"], UniqueConstraintError), told["error"]
                assert got is None
                model[other] = None
        held = {v[0]: k for k, v in model.items() if v is not None and k != mid}
        actual = _view(_get(mid))
        if error is None:
            assert actual == after, (error, actual, after)
            assert after is None or held.get(after[0]) is None, "two owners"
            model[mid] = after
        elif isinstance(error, OutcomeUnknownError):
            assert actual in (before.get(mid), after), (actual, before.get(mid), after)
            model[mid] = actual
        else:
            assert isinstance(error, UniqueConstraintError | ConcurrentModificationError), (
                repr(error))
            assert actual == before.get(mid), f"{type(error).__name__} but applied"
            if isinstance(error, UniqueConstraintError):
                assert after is not None and after[0] in held, "a unique refusal untrue"
            model[mid] = before.get(mid)
        _check(local, run, model)


@pytest.mark.sync_only
@pytest.mark.engines('local')
def test_an_encrypted_version_is_refused() -> None:
    """A versioned entity's ``version`` sealed would be compared as a ciphertext by its
    save's condition: every save after the first a false ConcurrentModificationError."""
    with pytest.raises(DynaormError, match=r"SealedCount: Encrypted \['version'\] cannot "
                       "be the TTL attribute or a versioned entity's version"):
        class SealedCount(Entity):
            class Meta:
                table = club
                pk = "SC#{sid}"
                sk = "SC"
                versioned = True

            sid: str
            note: str = ""
            version: Encrypted[int] = 0




@pytest.mark.sync_only
@pytest.mark.engines('local')
def test_the_models_row_kinds_are_the_keys_dynamodb_local_holds(local: TestBackend) -> None:
    """Every item a run of saves, handle changes and deletes leaves is of exactly one of
    the kinds ``table.model()`` lists for the entity, and every kind a save writes is
    there."""
    (entity,) = [e for e in club.model()["entities"] if e["name"] == "Member"]
    kinds = entity["rows"]
    for mid, handle in (("k1", "ann"), ("k2", "bob"), ("k1", "cat"), ("k3", "dan")):
        _commit(lambda s, mid=mid, handle=handle: s.save(
            (_get(mid) or Member(mid=mid, handle=handle)).model_copy(
                update={"handle": handle, "bio": handle * 100, "secret": handle})))
    _commit(lambda s: s.delete(_get("k3"), history=True))  # type: ignore[arg-type]
    keys = [{"pk": i["pk"]["S"], "sk": i["sk"]["S"]} for i in local.scan_raw()
            if i["pk"]["S"].startswith(("MEM#k", "handle#"))]
    matched = [[k["role"] for k in kinds if all(
        _pattern(shape).match(key[attr]) for attr, shape in k["key"].items())] for key in keys]
    assert all(len(m) == 1 for m in matched), list(zip(keys, matched, strict=True))
    assert sorted(m[0] for m in matched) == sorted(
        ["latest copy"] * 2 + ["version row"] * 3 + ["unique guard"] * 2)


timed = Table("red_timed", ttl="expires", keyring=StaticKeyring(KEY, mac_key=KEY))


@pytest.mark.sync_only
@pytest.mark.engines('local')
def test_an_encrypted_ttl_is_refused() -> None:
    """The table's TTL attribute sealed: DynamoDB expires only a number, so the row would
    never expire and reads would return it past its TTL."""
    with pytest.raises(DynaormError, match=r"SealedExpiry: Encrypted \['expires'\] cannot "
                       "be the TTL attribute"):
        class SealedExpiry(Entity):
            class Meta:
                table = timed
                pk = "SE#{sid}"
                sk = "SE"

            sid: str
            expires: Encrypted[int] | None = None
