"""Whole-table work as jobs an engine runs (:mod:`dynaorm.jobs`, :mod:`dynaorm.spark`).

A :class:`Job` is split into picklable :class:`Task` objects, one per scan segment. A
task carries no client and no credentials: the entity class (by reference), the table's
name, endpoint and region, and its share of the job's :class:`~dynaorm.Rate`; a worker
(a process, a Spark executor) points the table there and signs with its own credentials
(an instance or Glue role). ``job.run(task)`` is the segment's result; running a task
again (after a kill, or twice at once) loses and duplicates nothing:

- a backfill writes a marker attribute (:data:`MARK`: the names of every job that changed
  the item, a string set) with each change, conditioned on the marker as read and on
  ``save``'s conditions: an item already marked with the job's name is counted, never
  changed again (after another job's change too), and a change another writer got to
  first is made again from the fresh state;
- a migration moves only what is still in the previous layout, each move conditioned on
  the item as read; a check only reads (its repairs are conditioned on what they read).

Every run of a task scans its whole segment, so its result is whole: ``job.merge`` keeps
one result per segment and adds them up.
"""

import ast
import dataclasses
import gzip
import json
import linecache
import multiprocessing
import sys
import uuid
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from types import FrameType
from typing import Any, cast

from dynaorm._types import Item
from dynaorm.client.table import Table
from dynaorm.errors import ConditionFailedError, ConflictError, DynaormError, ItemNotFoundError
from dynaorm.jobs.checking import check_table
from dynaorm.jobs.export_files import listed, read_object, s3_client, split_url
from dynaorm.jobs.migration import migrate as migrate_table
from dynaorm.protocol.hooks import Operation
from dynaorm.protocol.policy import Rate, budget_of, held_to
from dynaorm.read.scan import check_segments
from dynaorm.schema.checks import JOB_MARK
from dynaorm.schema.entity import Entity, prepare_rows, raw_state, spec_of
from dynaorm.schema.streams import normalize_item
from dynaorm.sync.session import Session
from dynaorm.values.expressions import not_exists, raw_eq
from dynaorm.values.keys import key_value
from dynaorm.write.save import SaveEntry

#: the attribute a backfill marks each item it changed with (the job's name)
MARK = JOB_MARK
#: how many times one item's change is made again after another writer changed it first
ROUNDS = 5


@dataclass(frozen=True)
class Task:
    """One scan segment of a job: all a worker needs, picklable."""

    job: str  # "backfill", "migrate", "check", "reencrypt" or "export"
    entity: type[Entity] | Table  # (a table's job: its table, when only an adapter's rows)
    segment: int
    segments: int
    where: tuple[str, str | None, str | None]  # the table's name, endpoint and region
    rate: Rate | None = None  # this task's share of the job's budget
    fn: Callable[..., Any] | None = None  # a backfill's fn (reencrypt, export: its task runner)
    name: str = ""
    options: tuple[tuple[str, Any], ...] = ()
    files: tuple[str, ...] = ()  # a backfill's export data files (its segment's: one)

    @property
    def entity_class(self) -> type[Entity]:
        """The entity of an entity's job (a backfill, a reencrypt)."""
        assert isinstance(self.entity, type)
        return self.entity


@dataclass(frozen=True)
class BackfillReport:
    """What a backfill did (merged: over all segments)."""

    #: items the job changed (by this run of a task or an earlier one)
    changed: int = 0
    #: changes another writer got to first, made again from its new state
    conflicts: int = 0
    #: items not changed: their keys and why
    failed: list[str] = field(default_factory=list)
    scanned: int = 0


@dataclass(frozen=True)
class Job:
    """Whole-table work split into tasks: :meth:`tasks`, :meth:`run`, :meth:`merge`."""

    template: Task
    rate: Rate | None = None

    def tasks(self, parallel: int | None = None) -> list[Task]:
        """One task per segment, each with its share of the budget when ``parallel``
        tasks run at once (``None``: all of them)."""
        n = self.template.segments
        share = self.rate and self.rate.share(min(parallel or n, n))
        return [replace(self.template, segment=i, rate=share,
                        files=self.template.files[i:i + 1]) for i in range(n)]

    def run(self, task: Task) -> tuple[int, Any]:
        """Run one task here: ``(segment, its result)``, every request it sends held to
        the task's share of the job's budget (the client's own rate is left alone: other
        threads on it keep theirs)."""
        table = task.entity if isinstance(task.entity, Table) else cast(
            Table, spec_of(task.entity).table)
        if (table.name, table.endpoint_url, table.region) != task.where:
            table.name = task.where[0]
            table.connect(*task.where[1:])
        with held_to(task.rate):
            return task.segment, _run(task, table)

    def merge(self, results: Iterable[tuple[int, Any]]) -> Any:
        """One report from the tasks' results (one per segment: a task run twice gives
        a whole result each time, the last is kept)."""
        found = dict(results)
        missing = sorted(set(range(self.template.segments)) - found.keys())
        if missing:
            raise DynaormError(f"{self.template.job} job: no result for segments {missing}; "
                               "run their tasks (again)")
        return _merged(list(found.values()))


def job_of(kind: str, target: type[Entity] | Table, segments: int, rate: Rate | None,
         **more: Any) -> Job:
    """A job of ``kind`` on an entity, or on a table (named in a task by one of its
    entity classes, pickled by reference; an adapter's rows, made per table, by none: a
    table of only those, by the table itself, also by reference); a kind of its own module
    (``reencrypt``, ``export``) gives its task runner as ``fn``."""
    check_segments(0, segments)
    budget_of(rate)  # (refuses anything but a Rate)
    if isinstance(target, type):
        entity: type[Entity] | Table = target
        table = cast(Table, spec_of(target).table)
    elif not target.entities:
        raise DynaormError(f"{kind} job: table {target.name!r} has no entity classes")
    else:  # (an adapter's rows, made per table, pickle by no reference: the table does)
        entity = next((e for e in target.entities.values()
                       if not getattr(e, "__dynaorm_internal__", False)), target)
        table = target
    where = (table.name, table.endpoint_url, table.region)
    return Job(Task(kind, entity, 0, segments, where, **more), rate)


def backfill(entity: type[Entity], fn: Callable[[Any], Any], *, segments: int = 1,
             rate: Rate | None = None, name: str | None = None,
             export: str | None = None) -> Job:
    """Every item of ``entity`` passed to ``fn(obj) -> obj | None`` and the object it
    returns saved with ``save``'s conditions (``None``: left alone). ``name``: the
    marker the job writes (a fresh one by default; the same name resumes the job).
    ``export``: a DynamoDB export to S3 (``s3://bucket/prefix/AWSDynamoDB/ID/``, DynamoDB
    JSON): one task per data file instead of per segment, each item read again live."""
    files = () if export is None else _export_files(export)
    return job_of("backfill", entity, len(files) or segments, rate, fn=fn, files=files,
                name=name or uuid.uuid4().hex)


def _export_files(export: str) -> tuple[str, ...]:
    """The data files of a DynamoDB export to S3 (``.../data/*.gz``)."""
    bucket, prefix = split_url(export)
    files = tuple(f"s3://{bucket}/{key}" for key in listed(
        s3_client(), bucket, f"{prefix.rstrip('/')}/data/") if key.endswith(".gz"))
    if not files:
        raise DynaormError(f"backfill job: no data files under {export}")
    return files


def _exported(task: Task, session: Session) -> Iterator[Entity | None]:
    """The live state of each item of the task's entity in its export data file, read
    again consistently (the export is older than the table)."""
    spec = spec_of(task.entity_class)
    for line in gzip.decompress(read_object(s3_client(), *split_url(task.files[0]))
                                ).splitlines():
        item = normalize_item(json.loads(line)["Item"]) or {}
        row = spec.rules.sort_keys.parse(key_value(item.get(spec.table.sk or "", {"S": ""})))
        if spec.owns(item) and not (row is not None and row[0]):  # (no version row)
            if spec.rules.preparers:  # (key material: Encrypted fields)
                session.client.driver.run(prepare_rows((spec,), (item,)), Operation(
                    "get", (spec.table.name,), (task.entity_class,)))
            obj = task.entity_class._from_item(item)
            yield session.get(task.entity_class, consistent=True,
                              **{f: obj.__dict__[f] for f in spec.lookup_fields})


def migrate(table: Table, *, segments: int = 1, rate: Rate | None = None,
            dry_run: bool = False, page_size: int | None = None) -> Job:
    """``dynaorm migrate`` as a job: a :class:`~dynaorm.jobs.migration.MigrationReport`."""
    return job_of("migrate", table, segments, rate,
                options=(("dry_run", dry_run), ("page_size", page_size)))


def check(table: Table, *, segments: int = 1, rate: Rate | None = None, fix: bool = False,
          page_size: int | None = None) -> Job:
    """``dynaorm check`` as a job: a :class:`~dynaorm.jobs.checking.CheckResult`."""
    return job_of("check", table, segments, rate,
                options=(("fix", fix), ("page_size", page_size)))


def _marks(item: Item | None) -> set[str]:
    """The names of the jobs that changed a stored item (its marker: a string set; a
    0.5 job's is one string)."""
    av = (item or {}).get(MARK) or {}
    return set(av.get("SS", ())) | ({av["S"]} if "S" in av else set())


def _change(session: Session, obj: Entity | None, task: Task) -> tuple[str, int]:
    """Change one item: ``("changed" | "unchanged" | "gone" | why not, conflicts)``. The
    change writes the item's marker with every job name that changed it, this one's
    added, on the condition that the marker is still as read (and ``save``'s own): a job
    resumed after another job touched the item changes it once."""
    spec = spec_of(task.entity_class)
    assert task.fn is not None
    for conflicts in range(ROUNDS):
        if obj is None:
            return "gone", conflicts
        loaded = getattr(obj._dynaorm_state, "item", None)
        marks = _marks(loaded)
        if task.name in marks:
            return "changed", conflicts  # (by an earlier or a concurrent run)
        key = {f: obj.__dict__[f] for f in spec.lookup_fields}
        try:
            new = task.fn(obj)
        except Exception as exc:  # (one item's bad data does not stop its segment)
            return f"{task.fn.__name__} raised {exc!r}", conflicts
        if new is None:
            return "unchanged", conflicts
        if new is not obj and raw_state(new) is None and type(new) is type(obj):
            new._dynaorm_state = obj._dynaorm_state  # (a new object replaces the item read)
        was = (loaded or {}).get(MARK)
        session.stage_write(SaveEntry(new, condition=not_exists(MARK) if was is None else
                                      raw_eq(MARK, was),
                                      mark={MARK: {"SS": sorted(marks | {task.name})}}))
        try:  # (a commit clears the stage, sent or not)
            session.commit()
            return "changed", conflicts
        except (ConflictError, ConditionFailedError, ItemNotFoundError):
            pass  # another writer got to it first: made again from its fresh state
        except DynaormError as exc:
            return str(exc), conflicts
        obj = session.get(task.entity_class, consistent=True, **key)
    return f"still changing after {ROUNDS} attempts", ROUNDS


def _backfill(task: Task, table: Table) -> BackfillReport:
    session = Session(table)
    changed = conflicts = scanned = 0
    failed = []
    scan = session.scan(task.entity_class, segment=task.segment, segments=task.segments)
    for obj in _exported(task, session) if task.files else scan.consistent():
        scanned += 1
        outcome, lost = _change(session, obj, task)
        conflicts += lost
        changed += outcome == "changed"
        if obj is not None and outcome not in ("changed", "unchanged", "gone"):
            key = spec_of(task.entity_class).primary_key(obj.__dict__)
            failed.append(f"{task.entity_class.__name__} {key}: {outcome}")
    return BackfillReport(changed, conflicts, failed, scanned)


def _merged(parts: list[Any]) -> Any:
    """One report of the parts' class: numbers added, lists joined, counts (or lists) by
    name added up, flags true when true in every part, anything else the first part's."""
    def join(values: list[Any]) -> Any:
        if isinstance(values[0], bool):
            return all(values)
        if isinstance(values[0], int | list):
            return sum(values[1:], values[0])
        if isinstance(values[0], dict):
            out: dict[str, Any] = {}
            for d in values:
                out.update({k: out[k] + v if k in out else v for k, v in d.items()})
            return out
        return values[0]
    return type(parts[0])(**{f.name: join([getattr(p, f.name) for p in parts])
                             for f in dataclasses.fields(parts[0])})


def _run(task: Task, table: Table) -> Any:
    where = {"segment": (task.segment, task.segments), **dict(task.options)}
    if task.job == "migrate":
        return migrate_table(table, check=False, **where)
    if task.job == "check":
        return check_table(table, **where)
    if task.job == "backfill":
        return _backfill(task, table)
    assert task.fn is not None  # (a job of its own module: its task runner)
    return task.fn(task, table)


def run_local(job: Job, workers: int = 1,
              progress: Callable[[int, int], object] | None = None) -> Any:
    """Run every task of ``job`` in ``workers`` processes (started afresh, as an engine's
    workers are: each task carries what it needs) and merge their results;
    ``progress(done, total)`` is told as each task ends."""
    if type(workers) is not int or workers < 1:
        raise DynaormError(f"run_local: workers must be an int >= 1, got {workers!r}")
    tasks = job.tasks(workers)
    if workers == 1:
        return job.merge(_counted(map(job.run, tasks), len(tasks), progress))
    _check_guarded(sys._getframe(1))
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(workers, mp_context=context) as pool:
        done = as_completed([pool.submit(job.run, task) for task in tasks])
        return job.merge(_counted((f.result() for f in done), len(tasks), progress))


def _check_guarded(frame: FrameType | None) -> None:
    """Refuse a call from the main script's top level outside ``if __name__ ==
    "__main__":``: each spawned worker imports the script again and would run it again."""
    while frame and frame.f_code.co_name != "<module>":
        frame = frame.f_back
    path = frame and frame.f_globals.get("__file__")
    if frame is None or frame.f_globals.get("__name__") not in ("__main__", "__mp_main__"
                                                                  ) or not path:
        return
    line = frame.f_lineno  # (read as the import system does: a zipapp, a coding line)
    source = "".join(linecache.getlines(path, frame.f_globals))
    try:
        if not source:  # (not readable: not checked)
            return
        tree = ast.parse(source)
    except (SyntaxError, ValueError):  # (not the script that runs: not checked)
        return
    if not any(isinstance(node, ast.If) and "__main__" in ast.unparse(node.test) and (
            node.lineno <= line <= (node.end_lineno or 0)) for node in ast.walk(tree)):
        raise DynaormError(f"run_local: called at the top level of {path} (line "
                           f"{frame.f_lineno}) with workers > 1: what the script does there "
                           '(making tables, running the job) belongs under `if __name__ == '
                           '"__main__":` (each worker process imports the script again)')


def _counted(results: Iterator[Any], total: int,
             progress: Callable[[int, int], object] | None) -> Iterator[Any]:
    """``results``, telling ``progress`` how many of ``total`` have come."""
    for n, result in enumerate(results, 1):
        if progress is not None:
            progress(n, total)
        yield result


def run_spark(job: Job, spark: Any, progress: Callable[[int, int], object] | None = None
              ) -> Any:
    """Run every task of ``job`` on Apache Spark (a ``SparkSession``: AWS Glue, EMR, or
    local mode), one Spark task per segment, and merge their results (each task's report,
    the only thing the driver collects); ``progress(done, total)`` is told when they
    start and when all have ended."""
    context = spark.sparkContext
    tasks = job.tasks(context.defaultParallelism)
    if progress is not None:
        progress(0, len(tasks))
    found = context.parallelize(tasks, len(tasks)).map(job.run).collect()
    if progress is not None:
        progress(len(tasks), len(tasks))
    return job.merge(found)
