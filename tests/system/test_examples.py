"""Every ``examples/*.py`` runs as a script on the embedded moto backend (what a reader who
runs it gets), exits 0 and prints what it promises; one runs against DynamoDB Local, its
endpoint given either way (``--endpoint-url`` or the environment). What an example shows
that depends on the engine is the subject of an integration test on every engine: running
all of them on DynamoDB Local too took about two minutes of CI's two cores.

The examples of one backend run in processes of their own, ``AT_ONCE`` at a time (each uses
its own table), each forked from one interpreter that imported what they all import
(tests/support/fork_scripts.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SCRIPTS = sorted(p.stem for p in EXAMPLES.glob("*.py") if not p.name.startswith("_"))
TIMEOUT = 120
#: examples that need an API another branch delivers: expected to fail until it is there
PENDING: dict[str, str] = {}


@dataclass(frozen=True)
class Run:
    name: str
    code: int
    out: str
    err: str

    def blocks(self) -> dict[str, list[str]]:
        """Results printed under each ``>>> code`` header, by the header's code."""
        found: dict[str, list[str]] = {}
        current: list[str] | None = None
        for line in self.out.splitlines():
            if line.startswith(">>> "):
                current = found.setdefault(line[4:], [])
            elif current is not None and line.startswith("    "):
                current.append(line.strip())
            else:
                current = None
        return found

    def block(self, code_start: str) -> list[str]:
        """The results under the header equal to ``code_start``, else the one it begins."""
        blocks = self.blocks()
        if code_start in blocks:
            return blocks[code_start]
        matches = [lines for code, lines in blocks.items() if code.startswith(code_start)]
        assert len(matches) == 1, (code_start, list(self.blocks()))
        return matches[0]


def _env(endpoint_env: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "AWS_ENDPOINT_URL_DYNAMODB"}
    if endpoint_env:
        env["AWS_ENDPOINT_URL_DYNAMODB"] = endpoint_env
    return env


#: examples run after the others, one at a time: the operations example's CreateTable
#: (settings, tags, an index's on-demand maximum) has failed with DynamoDB Local's
#: InternalFailure five attempts running while some thirty other examples created tables on
#: the same engine at once (never alone, nor beside eight others)
ALONE = ("operations",)


def run_all(names: Sequence[str], args: Sequence[str] = (),
            endpoint_env: str | None = None) -> dict[str, Run]:
    together = [n for n in names if n not in ALONE]
    runs = _run_together(together, args, endpoint_env)
    for name in names:
        if name in ALONE:
            runs.update(_run_together([name], args, endpoint_env))
    return runs


#: examples run at most this many at a time: some forty Python processes started at once
#: on a 2-core machine ran past TIMEOUT (killed) while pytest-xdist's other worker ran tests
AT_ONCE = 4


#: what every example imports, imported once by the interpreter the example runs fork from
PRELOAD = "_support,moto,boto3,dynaorm,dynaorm.testing"
FORK_SCRIPTS = Path(__file__).resolve().parents[1] / "support" / "fork_scripts.py"


def _run_together(names: Sequence[str], args: Sequence[str],
                  endpoint_env: str | None) -> dict[str, Run]:
    """Each example a process of its own, run as its script (``__main__``, its argv, its
    exit code), forked from one interpreter that imported moto, boto3 and dynaorm once:
    those imports were most of an example run's CPU."""
    spawning = [n for n in names if "run_local" in (EXAMPLES / f"{n}.py").read_text()]
    runs = {n: _run_alone(n, args, endpoint_env) for n in spawning}  # (processes of their
    names = [n for n in names if n not in spawning]  # own: not forked from a fork)
    if not names:
        return runs
    with tempfile.TemporaryDirectory() as out:
        done = subprocess.run(
            [sys.executable, str(FORK_SCRIPTS), "--preload", PRELOAD, "--at-once",
             str(AT_ONCE), "--timeout", str(TIMEOUT), "--out", out, "--",
             *(str(EXAMPLES / f"{name}.py") for name in names), "--", *args],
            cwd=EXAMPLES.parent, env=_env(endpoint_env), capture_output=True, text=True,
            timeout=TIMEOUT * len(names), check=False)
        codes = dict(line.split() for line in done.stdout.splitlines())
        assert done.returncode == 0 and set(codes) == set(names), done.stdout + done.stderr
        return runs | {name: Run(name, int(codes[name]), (Path(out) / f"{name}.out").read_text(),
                                 (Path(out) / f"{name}.err").read_text()) for name in names}


def _run_alone(name: str, args: Sequence[str], endpoint_env: str | None) -> Run:
    try:
        done = subprocess.run(
            [sys.executable, str(EXAMPLES / f"{name}.py"), *args], cwd=EXAMPLES.parent,
            env=_env(endpoint_env), capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired as exc:
        return Run(name, -9, _text(exc.stdout), _text(exc.stderr) + "\n(timed out)")
    return Run(name, done.returncode, done.stdout, done.stderr)


def _text(out: str | bytes | None) -> str:
    return out.decode(errors="replace") if isinstance(out, bytes) else out or ""


@pytest.fixture(scope="module")
def runs() -> dict[str, Run]:
    return run_all(SCRIPTS)


def ok(runs: dict[str, Run], name: str) -> Run:
    run = runs[name]
    assert run.code == 0, f"{name} exited {run.code}\n{run.out}\n{run.err}"
    return run


def test_every_example_has_checks() -> None:
    assert set(SCRIPTS) == set(CHECKS), "add output checks for new examples"


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=pytest.mark.xfail(reason=PENDING[n], strict=True))
    if n in PENDING else n for n in SCRIPTS])
def test_example_runs(runs: dict[str, Run], name: str) -> None:
    run = ok(runs, name)
    assert "# backend: " in run.out
    CHECKS[name](run)


@pytest.mark.parametrize("given", ["argument", "environment"])
def test_an_example_runs_on_the_endpoint_given(ddb_local: str, given: str) -> None:
    args = ["--endpoint-url", ddb_local] if given == "argument" else []
    run = run_all(["event_logs"], args, ddb_local if given == "environment" else None
                  )["event_logs"]
    assert run.code == 0, run.err
    assert f"# backend: {ddb_local}" in run.out
    assert len(run.block('s.query(Event, device_id="123").lt(')) == 3


# -- what each example must print --------------------------------------------------------


def check_native_index(run: Run) -> None:
    assert "acme/eu newest first: ['o3', 'o1', 'o0']" in run.out
    assert "acme/eu from 10:00: ['o1', 'o3']" in run.out
    assert "acme/eu at 09:00 over 20: ['o0']" in run.out
    assert "refused before sending" in run.out


def check_agent_tools(run: Run) -> None:
    assert {"get_ticket", "query_ticket", "history_ticket", "save_ticket", "update_ticket",
            "delete_ticket", "explain"} <= set(run.block("tools"))
    [closed] = run.block('update_ticket {"ticket_id": "T1", "set": {"status": "closed"}')
    assert "'version': 2" in closed and "'status': 'closed'" in closed
    [stale] = run.block('update_ticket {"ticket_id": "T1", "set": {"status": "open"}')
    assert stale.startswith("error: ConcurrentModificationError") and "expected version 1" in stale
    [page] = run.block("query_ticket")
    assert "'T1'" in page and "'T2'" in page and "'cursor': None" in page
    [other] = run.block('get_ticket {"tenant_id": "globex"')
    assert other.startswith("error: ScopeError")


def check_operations(run: Run) -> None:
    assert "refused before sending: pitr_days= takes a whole number of days from 1 to 35" \
        in run.out
    assert "deletion protection as created: False" in run.out
    assert ("CloudFormation OnDemandThroughput: {'MaxReadRequestUnits': 1000, "
            "'MaxWriteRequestUnits': 500}") in run.out
    assert 'Terraform: resource "aws_dynamodb_table" "dynaorm-example-operations" {' in run.out
    assert "IAM actions: ConditionCheckItem, DeleteItem, GetItem, PutItem, UpdateItem" \
        in run.out
    assert ('IAM leading keys: ["TENANT#${aws:PrincipalTag/tenant_id}#*", '
            '"dynaorm:receipt#${aws:PrincipalTag/tenant_id}#*"]') in run.out
    assert 'IAM refuses tags holding: ["*#*"]' in run.out
    assert "what the scope cannot cover: nothing" in run.out


def check_vector_search(run: Run) -> None:
    if "# backend: in-process moto" not in run.out:  # (DynamoDB Local has no vector index)
        assert "this endpoint has no vector search" in run.out
        return
    nearest = run.block('search(Passage, "by_meaning", vector=embed(')
    assert [x.split()[1] for x in nearest] == ["p1", "p4"]  # (acme's only: not globex's p5)
    assert [x.split()[1] for x in run.block('... .where(F("category") == "support")')] == [
        "p4", "p3"]
    assert "a vector of another length: refused before sending" in run.out


def check_encrypted_fields(run: Run) -> None:
    assert "stored ssn is ciphertext: True ['B']" in run.out
    assert "read back: 123-45-6789" in run.out and "found by value: p1" in run.out
    assert "values(): [{'ssn': '987-65-4321'}]" in run.out
    assert "shown as: patient_id='p1' name='Ada' ssn='<encrypted>'" in run.out
    assert "another keyring: DecryptionError on field 'ssn'" in run.out


def check_offloaded_values(run: Run) -> None:
    assert "d1 body in its row: True" in run.out
    assert "d2 body is a reference: ['dynaorm:offloaded']" in run.out
    assert "d2 body read back: 1200000 characters" in run.out
    assert "renamed, S3 requests: []" in run.out
    assert "new body, S3 requests: ['s3:PutObject', 's3:DeleteObjects']" in run.out
    assert "check: 0 problems, 0 objects" in run.out


def check_tenant_keys(run: Run) -> None:
    assert "tenant keys in dynaorm-example-tenants-keys 2" in run.out
    assert "each value names its tenant's key: [b'tenant/', b'tenant/']" in run.out
    assert "forgot acme at the same time, twice" in run.out
    assert "acme's email: ForgottenError {'tenant_id': 'acme'}" in run.out
    assert "acme's other fields: [{'name': 'Ada'}]" in run.out
    assert "globex reads as before: hank@globex.io" in run.out
    assert "a write for acme: refused before sending" in run.out
    assert "sealed bytes open: b'agent state'" in run.out


def check_key_rotation(run: Run) -> None:
    assert "stored under: ['OLD: 14']" in run.out
    assert "re-sealed 7 rows, 0 current, 0 failed" in run.out
    assert "stored under: ['NEW: 14']" in run.out and "run again: re-sealed 0, current 7" in run.out
    assert "found by ssn: c0" in run.out and "history: ['flu', 'cold']" in run.out


def check_audit_rule(run: Run) -> None:
    assert "read back: 12 | orders in a scan: 1" in run.out  # (audit rows are not orders)
    assert ("audit rows: ['delete#ORDER#000003', 'insert#ORDER#000001', "
            "'update#ORDER#000002']") in run.out  # (the update by key has one too)
    assert "row kinds: ['item', 'row']" in run.out and "a save writes: {'row': 2}" in run.out


def check_cents_rule(run: Run) -> None:
    assert "stored price: {'N': '1234'}" in run.out and "read back: Decimal('12.34')" in run.out
    assert "values(): [{'price': Decimal('12.34')}]" in run.out
    assert "after set(): {'N': '999'}" in run.out
    assert "refused: Product.price: 0.125 is not a whole number of cents" in run.out
    assert "filter refused: Product.price: stored in cents" in run.out


def check_chat(run: Run) -> None:
    august = run.block('s.query(Message, room="seattle", user="amsg").begins_with(sent="2018-08")')
    assert len(august) == 2 and all("2018-08" in x and "amsg" in x for x in august)
    year = run.block('s.query(Message, room="seattle", user="amsg").begins_with(sent="2018")')
    assert len(year) == 4 and all(x.startswith("2018") for x in year)
    by_time = run.block('s.query(Message, index="gsi1", room="seattle").begins_with(')
    assert [x.split()[2] for x in by_time] == ["amsg", "carla", "bob", "amsg"]
    assert by_time == sorted(by_time)
    latest = run.block('s.query(Message, index="gsi1", room="seattle").reverse().limit(3)')
    assert len(latest) == 3 and latest == sorted(latest, reverse=True)


def check_events(run: Run) -> None:
    before = run.block('s.query(Event, device_id="123").lt(ts=1536019200)')
    assert [int(x.split()[0]) for x in before] == [1310212800, 1535544000, 1535990400]
    after = run.block('s.query(Event, device_id="123").gte(ts=1536019200)')
    assert len(after) == 1 and "e2" in after[0]
    alerts = run.block('s.query(Event, device_id="123").filter(')
    assert [x.split()[4] for x in alerts] == ["e2", "e4"]
    assert "latest event of device 123: e2" in run.out


def check_locations(run: Run) -> None:
    assert len(run.block('s.query(Store, chain="acme")')) == 6
    assert len(run.block('s.query(Store, chain="acme", country="USA")')) == 5
    texas = run.block('s.query(Store, chain="acme", country="USA", state="TX")')
    assert len(texas) == 4 and all(x.startswith("USA/TX/") for x in texas)
    houston = run.block('s.query(Store, chain="acme", country="USA", state="TX", city="Houston")')
    assert [x.split()[1] for x in houston] == ["s1", "s2"]  # not Houstonia's s6
    assert "get(...store_id='s4') -> USA/WA/Seattle" in run.out


def check_documents(run: Run) -> None:
    whole = run.block('s.query(Metadata, Permissions, Content, doc_id="d1")')
    assert [x.split("(")[0] for x in whole] == ["Metadata", "Permissions", "Content"]
    assert "version=3" in whole[2] and "body='final'" in whole[2]
    history = run.block('s.history(Content, doc_id="d1")')
    assert [f"version={n}" in x for n, x in enumerate(history, start=1)] == [True] * 3
    assert "v0_CONTENT" in run.out and "v00000003_CONTENT" in run.out
    assert "version=1) -> Content(doc_id='d1', body='draft'" in run.out


def check_iot(run: Run) -> None:
    first = run.block('s.query(Device, Reading, device_id="124").reverse().limit(4)')
    assert first[0].startswith("Device(") and "New York" in first[0]
    readings = [x.split()[2] for x in first[1:]]
    assert readings == ["10:40", "10:39", "10:38"]
    assert run.block('s.query(Device, Reading, device_id="125")')[0].startswith("Device(")


def check_courses(run: Run) -> None:
    assert "-> 3 of 6 items are in gsi1" in run.out
    enrolled = run.block('s.query(Registration, index="gsi1", course="CourseA")')
    assert [("72442" in x, "23552" in x) for x in enrolled] == [(True, False), (False, True)]
    after = run.block("# student 48533 confirms")
    assert len(after) == 3 and "48533" in after[2]


def check_orders(run: Run) -> None:
    spread = [x for x in run.out.splitlines() if x.strip().startswith("STATUS#open#")]
    assert len(spread) > 1  # the hot key lives in several partitions
    merged = run.block('s.query(Order, index="gsi1", status="open")  #')
    assert len(merged) == 9 and merged == sorted(merged)
    latest = run.block('s.query(Order, index="gsi1", status="open").reverse().limit(3)')
    assert latest == merged[::-1][:3]
    pages = [x for x in run.out.splitlines() if x.strip().startswith("page ")]
    paged = [i.strip("'[] ") for x in pages for i in x.split(":", 1)[1].split(",")]
    assert paged == [x.split()[1] for x in merged]


def check_adjacency(run: Run) -> None:
    courses = run.block('s.query(Enrollment, student_id="s1")')
    assert ["course_id='bio'" in courses[0], "course_id='math'" in courses[1]] == [True, True]
    students = run.block('s.query(Enrollment, index="gsi1", course_id="math")')
    assert ["student_id='s1'" in students[0], "student_id='s2'" in students[1]] == [True, True]
    course = run.block('s.query(Course, Enrollment, index="gsi1", course_id="bio")')
    assert course[0].startswith("Course(") and len(course) == 3
    assert run.block("s.get_many(Student") == ["Student(student_id='s1', name='Ana')",
                                                "Student(student_id='s2', name='Ben')"]


def check_users(run: Run) -> None:
    assert "refused: UniqueConstraintError: field='email'" in run.out
    steps = [x for x in run.out.splitlines() if x.startswith("--- table after:")]
    assert [x.rsplit("(", 1)[1] for x in steps] == [
        "3 items)", "3 items)", "6 items)", "6 items)", "0 items)"]
    assert "email#bobby@newmail.com" in run.out


def check_audits(run: Run) -> None:
    latest = run.block('s.query(Audit, equipment_id="E1")')
    assert [x.split()[:2] for x in latest] == [["v12", "pump"], ["v1", "valve"]]
    recent = run.block('s.history(Audit, equipment_id="E1", part="pump").reverse().limit(3)')
    assert [x.split()[0] for x in recent] == ["v12", "v11", "v10"]
    page = run.block('s.history(Audit, equipment_id="E1", part="pump").page_size(5)')
    assert [x.split()[0] for x in page] == ["v1", "v2", "v3", "v4", "v5"]
    assert "version=3) -> v3 " in run.out
    assert "stale writer refused: ConcurrentModificationError" in run.out
    assert "latest is still: v13" in run.out and "history has 13 rows" in run.out
    assert "v00000012_pump" in run.out and "v0_pump" in run.out


def check_stream_aggregate(run: Run) -> None:
    assert "# consumed 6 records: {'insert Order': 6}" in run.out
    assert run.block("counts after 6 new orders") == ["('open', 6)"]
    assert "# deltas: {'cancelled': 1, 'open': -4, 'shipped': 2}" in run.out
    assert run.block("counts after 3 status changes") == [
        "('cancelled', 1)", "('open', 2)", "('shipped', 2)"]
    assert "recounted from the orders: {'cancelled': 1, 'open': 2, 'shipped': 2}" in run.out
    assert "counters match the orders" in run.out
def check_observe(run: Run) -> None:
    assert run.block("result.requests") == ["TransactWriteItems: 2 actions"]
    assert "[hook]   row    of Customer CUSTOMER#c1" in run.out
    assert "[hook]   guard  of Customer CUSTOMER#c1" in run.out
    assert run.block("[operation for operation, _ in result.requests]  # after") == [
        "'GetItem'", "'TransactWriteItems'"]
    capacity = run.block("result.consumed_capacity")
    assert capacity and capacity[0].startswith("dynaorm-example-observe: ")
    logged = [x for x in run.out.splitlines() if x.startswith("  [log] DEBUG dynaorm: ")]
    assert len(logged) == 4 and "UpdateItem on dynaorm-example-observe: 1 action(s), " \
        "attempt 1" in logged[1]


def check_otel_tracing(run: Run) -> None:
    """The spans nest under the handler's; the throttled attempt is a failed child of the
    get beside its retry; capacity is counted as a metric."""
    lines = run.out.splitlines()
    start = lines.index("  POST /customers [INTERNAL]")
    assert lines[start + 1:start + 9] == [
        "    dynaorm.commit [INTERNAL] outcome=ok entity_types=('Customer', 'Order')",
        "      DynamoDB.TransactWriteItems [CLIENT] attempt=1 outcome=ok "
        "entity_types=('Customer', 'Order')",
        "    dynaorm.get [INTERNAL] outcome=ok entity_types=('Customer',)",
        "      DynamoDB.GetItem [CLIENT] attempt=1 outcome=failed type=ThrottlingException "
        "entity_types=('Customer',)",
        "      DynamoDB.GetItem [CLIENT] attempt=2 outcome=ok entity_types=('Customer',)",
        "    dynaorm.query [INTERNAL] outcome=ok entity_types=('Order',)",
        "      DynamoDB.Query [CLIENT] attempt=1 outcome=ok entity_types=('Order',)",
        "# consumed capacity counted for: " + (
            "['GetItem', 'Query']" if "in-process moto" in run.out else
            "['GetItem', 'Query', 'TransactWriteItems']")]
def check_like_dynamodb(run: Run) -> None:
    assert run.block("db.session().query(Order, index='by_status', status='open')  # right") == [
        "(nothing)"]
    assert run.block("db.session().get(Order, order_id='o1'") == [
        "Order(order_id='o1', status='open')"]
    assert run.block("db.session().query(Order, index='by_status', status='open')  # 30") == [
        "Order(order_id='o1', status='open')"]
    assert run.block("charged after a retry") == ["1"]
    assert run.block("the same token, other items") == ["'IdempotentParameterMismatchException'"]
    assert run.block("ThrottledError") == ["('ProvisionedThroughputExceededException', 5)"]
    assert run.block("reasons") == [
        "('IndexWriteProvisionedThroughputExceeded', 'dynaorm-example-like', 'by_status', True)"]
    (warning,) = run.block("a session dropped")
    assert "save Order {'pk': 'ORDER#o3', 'sk': 'ORDER'}" in warning


def check_wire_failures(run: Run) -> None:
    assert run.block("db.session().get(") == ["'hello'"]
    assert run.block("a 200 HTML page") == ["('BadAnswerError', 'ConnectionError', True)"]
    assert run.block("an answer cut") == ["('AnswerLostError', 'ConnectionError', True)"]
    assert run.block("a 503 page") == ["('RequestError', '503', True)"]
    assert run.block("nothing listening") == [
        "('RequestNotSentError', 'ConnectionError', False)"]


def check_outcome_proofs(run: Run) -> None:
    assert run.block("insert lost, then deleted") == [
        "('OutcomeUnknownError', [{'pk': 'WALLET#w2', 'sk': 'WALLET'}])"]
    assert run.block("stored w2") == ["None"]
    assert run.block("the first withdrawal is told") == ["'OutcomeUnknownError'"]
    assert run.block("after a 500 proved unapplied") == ["(2, 85)"]
    assert run.block("after pickle") == ["(True, 86)"]
    assert run.block("delete_many: written") == ["(['m0', 'm2'], ['m1'])"]
    assert run.block("overwrite expecting version 1") == ["'ConcurrentModificationError'"]
    assert run.block("stored ledger") == ["(2, 5)"]
def check_backfill_job(run: Run) -> None:
    assert "tasks: 4 (picklable: one per scan segment)" in run.out
    assert "changed 20 of 30, failed 0" in run.out
    assert "run again: changed 20" in run.out
    assert "credits now held: [0, 100]" in run.out


def check_export_datasets(run: Run) -> None:
    assert run.block("jobs.run_local(jobs.export(shop, out, segments=2, history=True))")[:3] == [
        "Customer: 3 rows", "Order: 6 rows", "Order.history: 7 rows"]
    assert "unclaimed: {'legacy': 1}" in run.out
    assert "columns (the encrypted note left out): ['customer_id', 'email', 'country']" in \
        run.out
    assert run.block(">>> DuckDB"[4:]) == ["DE 2 40.50", "FR 4 54.00"]
    assert "o0's history: [('o0', 1, 'open'), ('o0', 2, 'paid')]" in run.out
    assert "Polars: gift orders ['o1', 'o3', 'o5']" in run.out


def check_bulk_load(run: Run) -> None:
    assert run.block('jobs.load(shop, source(), s3="s3://example-loads/shop")')[0] == (
        "399 of 401 entities loaded (802 rows, 1 operation(s), last COMPLETED)")
    assert "UniqueConstraintError for CUSTOMER#c0000: field 'email'" in run.out
    assert "ItemExistsError for CUSTOMER#legacy-1: field None" in run.out
    assert "check: 0 problem(s)" in run.out
    assert "items: 802 " in run.out and "c0001's orders: 3" in run.out
    assert "run again with the same name: 399 loaded, 1 operation" in run.out
    assert "{'Order': 3} from an export of 6 items" in run.out


def check_exactly_once(run: Run) -> None:
    # a message delivered twice debits once (the second commit is replayed), and the same
    # key with other writes is refused
    assert "after two deliveries of msg-1: balance -500 (debited once)" in run.out
    assert "refused: IdempotencyMismatchError" in run.out
    assert "msg-3 across two tables, then the ledger's write alone: refused" in run.out
    assert "with a receipts table: msg-4 on the shop, then on the ledger: refused" in run.out


def check_lake(run: Run) -> None:
    assert run.block("jobs.run_local(jobs.export(shop, 'first', format='iceberg', ...))") == [
        "shop.Customer: 3 rows committed", "shop.Order: 6 rows committed",
        "shop.Order_history: 6 rows committed"]
    assert "tables: ['shop.Customer', 'shop.Order', 'shop.Order_history']" in run.out
    assert "'total': 'decimal(10, 2)', 'placed': 'timestamptz', 'tags': 'list<string>'" in \
        run.out
    assert run.block("jobs.run_local(jobs.export(shop, 'second', format='iceberg', ...))") == [
        "shop.Customer: 2 rows committed", "shop.Order: 6 rows committed",
        "shop.Order_history: 7 rows committed"]
    assert run.block(">>> DuckDB"[4:]) == ["FR 147.49"]
    assert "Polars: o3's history [(1, Decimal('28.50')), (2, Decimal('99.99'))]" in run.out


def check_counter(run: Run) -> None:
    assert "after the first view: views=1 referrers=['google']" in run.out
    assert "after 4 views: views=4 referrers=['bing', 'google', 'news']" in run.out
    assert "second writer refused: ConcurrentModificationError" in run.out
    assert "final views: 114" in run.out


def check_surface(run: Run) -> None:
    assert "by a Session: loans=1" in run.out and "by an AsyncSession: loans=2" in run.out
    assert "another tenant's book: refused" in run.out
    assert "every key of tenant t1 begins (('TENANT#', '{tenant_id}'), True)" in run.out
    assert "row kinds: ['receipt', 'surface note']" in run.out
    assert "books a scan reads: ['b1']" in run.out


def check_nested_profile(run: Run) -> None:
    assert ("address: Bergen 0150; logins=1; history=['login']; prefs={'theme': 'dark'}"
            in run.out)
    assert "field 'stats.credits': the result of add() must keep ge=0" in run.out
    assert "field 'history': the result of append() must keep max_length=3" in run.out
    assert "history=['signup', 'view', 'view']; prefs={}; credits=0" in run.out
    assert "typo: F('adress.city') names nothing" in run.out
    assert "typo: Profile: 'address.town': Address has no field 'town'" in run.out


def check_migration(run: Run) -> None:
    assert "read under the old layout: Ann <Ann@example.com>" in run.out
    assert "    ACCOUNT#u0 | PROFILE | account" in run.out
    assert "dry run: {'Account': 2} in the previous layout" in run.out
    assert "migrate: moved {'Account': 2}; check problems: []" in run.out
    assert "owner_pk='ACCOUNT#u2'" in run.out
    assert "find by email after the move: Bob" in run.out


def check_state_machine(run: Run) -> None:
    assert run.out.count("refused") == 3
    assert "ship: paid -> shipped" in run.out
    assert "final: state='shipped' history=['pay', 'ship']" in run.out
    assert "history=['pay', 'ship', 'archived']" in run.out


def check_game_lobby(run: Run) -> None:
    assert "53 tried to join: 50 joined, people=50, seats=50" in run.out
    assert "first start: True" in run.out and "second start: False" in run.out
    assert "joining a started game: False" in run.out
    assert "final: people=50 started=True" in run.out


def check_leaderboard(run: Run) -> None:
    assert "ann +30 -> 55" in run.out
    assert run.block('top 3: s.query(Player, index="by_score", board="arcade")'
                     '.reverse().limit(3)') == ["ann: 55", "bob: 40", "cat: 10"]
    assert "p1's index key: 0000000055#p1" in run.out


def check_existing_table(run: Run) -> None:
    assert "TTL on: expiresAt" in run.out
    assert "account 42: Ann (pro)" in run.out
    assert run.block("s.query(LoginSession, account_id=42)") == ["a1 on laptop"]
    assert "page: 2 items, 1 skipped (no entity owns them)" in run.out
    assert run.block("s.scan(Account)") == ["7: Bob", "42: Ann"]
    assert ("stored session attributes: ['SK', '_rev', 'accountId', 'device', 'expiresAt', "
            "'token']") in run.out  # (0.5: _rev, the revision every dynaorm write stamps)
    assert "expiresAt stored as: N" in run.out
    assert "bob's plan: team; updated_at set: True" in run.out


def check_beside_another_mapper(run: Run) -> None:
    assert "dynaorm saves qty=3: version 2" in run.out
    assert "java saves from its stale copy: refused" in run.out
    assert "java saves from a fresh copy: saved" in run.out
    assert "dynaorm's delete from its stale copy: refused" in run.out
    assert "o1 now: PAID, qty 3, version 3" in run.out
    assert "dynaorm creates o2 at version 1" in run.out


def check_round_trip(run: Run) -> None:
    assert "read: Ann, seen 2026-01-02T03:04:05+00:00" in run.out
    assert "prefs: {'M': {'theme': {'S': 'dark'}, 'beta': {'BOOL': True}}}" in run.out
    assert "seen: 2026-11-27T09:30:56Z" in run.out
    assert "logins: ['2026-01-02T03:04:05Z', '2026-11-27T09:30:56Z']" in run.out
    assert "untouched: score 1.5" in run.out  # (DynamoDB keeps 1.50 as 1.5; moto as sent)
    assert "source import-2019" in run.out
    assert "the old code parses it: 2026-11-27 09:30:56" in run.out


def check_key_layouts(run: Run) -> None:
    assert [line.split(":")[0] for line in run.block('s.query(Store, Order, store_id="s1")')
            ] == ["Order", "Order", "Order", "Store"]
    assert run.block('s.query(Order, store_id="s1")') == [
        "2024-05-01T09:00: 12", "2024-05-01T10:30: 30", "2024-05-02T08:15: 7"]
    assert "orders page: 3 orders, 1 skipped" in run.out
    assert "s.get(Order, timestamp='METADATA'): refused, KeyTemplateError" in run.out
    assert "order count: 3" in run.out
    assert run.block("stored items") == [  # no store_id, no timestamp, no type attribute
        # (0.5: the revision every dynaorm write stamps on a row)
        "PK='STORE#s1' SK='2024-05-01T09:00' _rev=<revision> total=12",
        "PK='STORE#s1' SK='2024-05-01T10:30' _rev=<revision> total=30",
        "PK='STORE#s1' SK='2024-05-02T08:15' _rev=<revision> total=7",
        "PK='STORE#s1' SK='METADATA' _rev=<revision> name='Main street'"]


def check_pynamodb_bridge(run: Run) -> None:
    assert "dynaorm reads: views=10 replies=2 version=1 last_post=2024-06-03T09:30:00+00:00" \
        in run.out
    assert "PynamoDB reads: views=11 version=2 tags=['howto', 'pynamodb']" in run.out
    assert "stale PynamoDB save refused: PutError" in run.out
    assert "stale dynaorm save refused: ConditionFailedError" in run.out
    ours = run.block('s.query(Thread, index="by_views", forum_name="dynamo").gt(views=5)')
    assert ours == ["bridges: 11 views, version 3", "queries: 40 views, version 1"]
    assert run.block('ThreadModel.by_views.query("dynamo", ThreadModel.views > 5)') == ours
    assert run.block('.filter(F("last_post")') == ["queries"]
    assert "stored by dynaorm: last_post=2024-06-04T09:30:00.000000+0000 reply_count=0 " \
        "version=1" in run.out


def check_async_quickstart(run: Run) -> None:
    assert run.block("await asyncio.gather(") == ["'Ada'", "'Bob'"]
    assert run.block('await s.find(User, email="BOB@example.com")') == ["'bob'"]
    assert run.block("await s.commit()") == ["UniqueConstraintError"]
    pages = run.block("await s.query(Message, room=\"lobby\").page_size(5)") + run.block(
        "await q.page(page.cursor)")
    assert pages == [f"hello {i}" for i in range(10)]
    assert run.block("[m.body async for m") == ["hello 11", "hello 10", "hello 9"]
    assert run.block('await s.query(Message, room="lobby").count()') == ["12"]


def check_ttl_rules(run: Run) -> None:
    assert "the guard carries its owner's TTL: True" in run.out
    assert "a live reservation blocks: UniqueConstraintError (handle='ada')" in run.out
    assert "after r1 expired, r2 reserved 'ada': owner=r2" in run.out
    assert "r1 read: None" in run.out
    assert "version rows under the TTL attribute: 0" in run.out
    assert run.block('s.get(Draft, draft_id="d1")') == ["None"]
    assert run.block('s.history(Draft, draft_id="d1")') == [
        "v1: first", "v2: second", "v3: third"]
    assert "dynaorm check: 0 problem(s)" in run.out


def check_orders_and_audit(run: Run) -> None:
    """(0.4) One commit across two tables of one client: both written by one transaction;
    a refused commit leaves both unchanged."""
    assert "commit: ['TransactWriteItems']" in run.out
    shop = ["ORDER#o1 / ORDER", "order_number#2024-0001 / order_number#2024-0001"]
    assert run.block("shop table") == shop
    assert run.block("audit table") == ["orders #1: order o1 placed"]
    assert "refused: UniqueConstraintError: field='number' value='2024-0001'" in run.out
    assert run.block("shop table, after the refused commit") == shop
    assert run.block("audit table, after the refused commit") == [
        "orders #1: order o1 placed"]


def check_web_service(run: Run) -> None:
    """The FastAPI example's routes, called over HTTP (uvicorn in a thread, httpx)."""
    assert run.block("POST ada") == ["201 name='Ada' version=1"]
    assert run.block("POST eve with ada's email") == ["409 title='email already taken'"]
    server_owned = run.block("POST with customer_id and version")[0]
    assert "customer_id='chosen'" not in server_owned and server_owned.endswith("version=1")
    assert run.block("GET ada") == ["200 name='Ada'", 'ETag "1"']
    assert run.block("PUT ada If-Match current") == ["200 name='Ada L.' version=2"]
    assert run.block("PUT ada If-Match stale") == ["412 title='precondition failed'",
                                                   'ETag "2"']
    assert run.block("PUT ada If-Match *") == ["200 name='Ada Any' version=3"]
    assert run.block("GET page 1 (limit=4)") == ["200", "4 items, cursor set"]
    assert run.block("GET page 2") == ["200", "2 items, cursor None"]
    assert run.block("GET page with a tampered cursor") == ["400 title='bad request'"]
    assert run.block("GET a missing customer")[0].startswith("404 ")
    assert run.block("GET a customer id holding '#'") == [
        "400 title='invalid customer_id' field='customer_id'"]
    assert run.block("DELETE a missing customer") == [
        "404 title='not found' key={'tenant': 't1', 'customer_id': 'nobody'}"]
    assert run.block("DELETE ada") == ["204"]
    assert run.block("GET ada again")[0].startswith("404 ")


def check_langgraph_agent(run: Run) -> None:
    """Stopped at the interrupt, resumed from the table, forked in the past; another
    tenant's graph sees nothing of the thread."""
    assert run.block("graph.get_state(config).next") == ["('review',)"]
    assert run.block('graph.invoke(Command(resume="yes"), config)') == [
        "'draft about single-table design'", "'review: yes'", "'published'"]
    assert run.block('graph.invoke(Command(resume="not yet"), config)') == [
        "'draft about single-table design'", "'edited'", "'review: not yet'", "'shelved'"]
    assert run.block('build("globex").get_state(config).values') == ["{}"]


def check_langgraph_threads(run: Run) -> None:
    """A DeltaChannel thread of 9 turns read in 2 requests; a second worker refused while
    the first runs, the next turn anywhere; nothing stored in the clear; prune keeps the
    state (issue 83)."""
    assert run.block("len(a.get_state(config).values['messages'])") == ["27"]
    assert run.block("requests of that get_state") == ["2"]
    assert run.block("b's turn while a runs") == ["'ThreadBusyError'"]
    assert run.block("the last two messages") == [
        '"b thinks about \'user says 10\'"', "'b replies (32 messages so far)'"]
    assert run.block("'user says' in the stored items") == ["False"]
    assert run.block("messages after prune") == ["33"]


def check_lambda_handler(run: Run) -> None:
    """The Lambda handler invoked with sample events, one client for every invocation."""
    assert run.block("POST an order") == ["201 item='book' quantity=2"]
    assert run.block("GET the order") == ["200 item='book'"]
    assert run.block("GET page 1") == ["200", "2 items, cursor set"]
    assert run.block("GET page 2") == ["200", "1 items, cursor None"]
    assert run.block("POST quantity 0") == ["400 title='invalid body'"]
    assert run.block("GET order id holding '#'") == ["400 title='invalid order_id'"]
    assert run.block("DELETE a missing order") == [
        "404 title='not found' key={'customer_id': 'c1', 'order_id': 'nope'}"]
    assert run.block("9 invocations, one client") == ["same client: True"]


def check_model_and_cost(run: Run) -> None:
    assert "Customer: lands in -; a save writes {'row': 1, 'unique guard': 1}" in run.out
    assert "Order: lands in ['gsi1']; a save writes {'row': 1, 'index entry': 1}" in run.out
    assert ("schema.json: entities ['Customer', 'Customer_email_guard', 'Order'], "
            "GSIs ['gsi1']") in run.out  # (the guard items: an entity of their own)
    assert "total: 0 read units, 4 write units" in run.out
    assert "by role: {'Customer': {'row': 2.0, 'unique guard': 2.0}}" in run.out
    assert "consumed, by entity and role: " in run.out  # (what the engine reported)
    assert "a query of 6 open orders: 1.0 read units (eventually consistent)" in run.out
    assert "consistent, of the customer's partition: 2.0" in run.out


CHECKS = {
    "bulk_load": check_bulk_load,
    "offloaded_values": check_offloaded_values,
    "tenant_keys": check_tenant_keys,
    "export_datasets": check_export_datasets,
    "lake": check_lake,
    "exactly_once": check_exactly_once,
    "model_and_cost": check_model_and_cost,
    "web_service": check_web_service,
    "lambda_handler": check_lambda_handler,
    "langgraph_agent": check_langgraph_agent,
    "langgraph_threads": check_langgraph_threads,
    "orders_and_audit": check_orders_and_audit,
    "ttl_rules": check_ttl_rules,
    "pynamodb_bridge": check_pynamodb_bridge,
    "async_quickstart": check_async_quickstart,
    "existing_table": check_existing_table,
    "beside_another_mapper": check_beside_another_mapper,
    "round_trip": check_round_trip,
    "key_layouts": check_key_layouts,
    "backfill_job": check_backfill_job,
    "counter": check_counter,
    "surface": check_surface,
    "nested_profile": check_nested_profile,
    "migration": check_migration,
    "state_machine": check_state_machine,
    "game_lobby": check_game_lobby,
    "leaderboard": check_leaderboard,
    "chat_messages": check_chat,
    "event_logs": check_events,
    "locations": check_locations,
    "document_tracking": check_documents,
    "iot_latest_readings": check_iot,
    "course_enrollments": check_courses,
    "orders_by_status": check_orders,
    "adjacency_list": check_adjacency,
    "users_unique": check_users,
    "audit_versions": check_audits,
    "stream_aggregate": check_stream_aggregate,
    "observe_requests": check_observe,
    "otel_tracing": check_otel_tracing,
    "wire_failures": check_wire_failures,
    "like_dynamodb": check_like_dynamodb,
    "outcome_proofs": check_outcome_proofs,
    "native_index": check_native_index,
    "vector_search": check_vector_search,
    "agent_tools": check_agent_tools,
    "operations": check_operations,
    "encrypted_fields": check_encrypted_fields,
    "key_rotation": check_key_rotation,
    "audit_rule": check_audit_rule,
    "cents_rule": check_cents_rule,
}
