"""The exception tree. Every error dynaorm raises derives from :class:`DynaormError`."""

from typing import Any

__all__ = [
    "AnswerLostError",
    "BadAnswerError",
    "BulkWriteError",
    "ConcurrentModificationError",
    "ConditionFailedError",
    "ConflictError",
    "DecryptionError",
    "DynaormError",
    "ForgottenError",
    "IdempotencyMismatchError",
    "InvalidCursorError",
    "InvalidValueError",
    "ItemDecodeError",
    "ItemExistsError",
    "ItemGoneError",
    "ItemNotFoundError",
    "ItemTooLargeError",
    "KeyTemplateError",
    "KeyringError",
    "LakeError",
    "LeaseError",
    "ModelFileError",
    "MultipleResultsError",
    "OffloadError",
    "OutcomeUnknownError",
    "RequestError",
    "RequestNotSentError",
    "ScopeError",
    "SettingsError",
    "TableNotFoundError",
    "ThrottledError",
    "TransactionConflictError",
    "TransactionTooLargeError",
    "UniqueConstraintError",
]


class DynaormError(Exception):
    """Base class of every dynaorm error."""

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled whole, whatever the subclass's ``__init__`` asks (a job's worker process
        sends its error to the one that started it: unpickling must not call it)."""
        return (_rebuilt, (type(self), self.args, self.__dict__))


def _rebuilt(cls: type[DynaormError], args: tuple[Any, ...], state: dict[str, Any]
             ) -> DynaormError:
    """A pickled :class:`DynaormError` made again without calling its ``__init__``."""
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error


class DecryptionError(DynaormError):
    """An encrypted field's stored value does not decrypt: its key is missing or wrong, or
    the value was edited or copied from another item or field. ``field`` and ``key_id``
    name them; no value is ever returned in its place."""

    def __init__(self, message: str, *, field: str, key_id: str):
        super().__init__(message)
        self.field = field
        """The field whose value did not decrypt."""
        self.key_id = key_id
        """The id of the key the value was written under (``"?"``: unreadable)."""


class KeyringError(DynaormError):
    """A keyring could not give the key material a read or a write needs, or refuses to
    serve: a KMS request failed after its retries (a missing or disabled key, access
    denied, a key of the wrong kind, a throttle that outlived the attempts: the
    :class:`RequestError` is its ``__cause__``), a key of the wrong size, or a keyring
    without a MAC key for an entity with a unique encrypted field. Raised before the
    write it was for is sent: nothing of it is stored."""

    def __init__(self, message: str, *, key_id: str):
        super().__init__(message)
        self.key_id = key_id
        """The id of the key at fault (a KMS key id, alias or ARN as the keyring names
        it; a :class:`~dynaorm.StaticKeyring`'s key id)."""


class ForgottenError(KeyringError):
    """The key of a tenant was destroyed (``table.forget(scope=...)``, ``dynaorm forget``):
    an encrypted value of that tenant does not open, wherever its copy lives (a live
    row, a version row, an offloaded object, a backup or an export holding ciphertext),
    and a write that would seal one for it is refused before anything is sent. ``scope``
    names the tenant (``{field: value}``); ``forgotten_at`` is when its key was destroyed
    (ISO-8601, UTC)."""

    def __init__(self, message: str, *, key_id: str, scope: dict[str, Any] | None = None,
                 forgotten_at: str | None = None):
        super().__init__(message, key_id=key_id)
        self.scope = scope
        """The tenant whose key is gone, as ``{key_scope field: value}``."""
        self.forgotten_at = forgotten_at
        """When its key was destroyed (ISO-8601, UTC; ``None``: unknown)."""


class KeyTemplateError(DynaormError, ValueError):
    """A key template is malformed, names an unknown field, or a value cannot go into a key.

    ``field`` names the field at fault when there is one (a value holding ``#``, empty or
    too long for a key): a web handler answers 400 naming it."""

    field: str | None = None
    """The field whose value cannot go into a key (``None``: a template is at fault)."""

    def __init__(self, message: str, *, field: str | None = None):
        super().__init__(message)
        self.field = field


def table_of(entity: type[Any] | None) -> str | None:
    """The name of the table an entity class lives in (``None``: not an entity)."""
    spec = getattr(entity, "__dynaorm_spec__", None)
    table = getattr(spec, "table", None)
    name = getattr(table, "name", None)
    return name if isinstance(name, str) else None


def _on_table(message: str, table: str | None) -> str:
    """``message`` naming ``table`` (a commit may write to several tables)."""
    if table is None or repr(table) in message:
        return message
    return f"{message} (table {table!r})"


class _KeyedError(DynaormError):
    """An error about one stored item: ``entity`` (the class), ``key`` (its table key) and
    ``table`` (the name of the table it is stored in); the message names the table."""

    def __init__(self, message: str, *, entity: type[Any] | None = None,
                 key: dict[str, str] | None = None):
        self.table = table_of(entity)
        """The name of the table the item is stored in (``None`` when not known)."""
        super().__init__(_on_table(message, self.table))
        self.entity = entity
        """The entity class of the item (``None`` when not known)."""
        self.key = key
        """The item's stored table key (``{"pk": "TENANT#t", "sk": "CUSTOMER#c1"}``)."""

    @property
    def key_values(self) -> dict[str, Any]:
        """The item's key as the entity's field values (``{"tenant": "t", "customer_id":
        "c1"}``), parsed back from :attr:`key` through the key templates (typed as the
        fields are); empty when unknown."""
        spec = getattr(self.entity, "__dynaorm_spec__", None)
        if spec is None or not self.key:
            return {}
        try:
            return dict(spec.key_values(self.key))
        except Exception:  # a key that no longer fits the templates: nothing to say
            return {}


class _HoldsItem(_KeyedError):
    """A :class:`_KeyedError` with the stored entity DynamoDB returned, when it did."""

    def __init__(self, message: str, *, entity: type[Any] | None = None,
                 key: dict[str, Any] | None = None, item: Any = None):
        super().__init__(message, entity=entity, key=key)
        self.item = item
        """The stored entity at the key when the write failed (``None``: no item, not
        returned, or not of this class)."""


class ConflictError(DynaormError):
    """Another writer changed what this write was planned on: nothing of this write was
    stored; reload and retry. ``except ConflictError:`` is the one retry idiom: it catches
    :class:`ConcurrentModificationError`, :class:`ItemExistsError` and
    :class:`ItemGoneError`. None of them is ever raised for a write that was applied (an
    outcome dynaorm cannot decide is an :class:`OutcomeUnknownError`, never a conflict).
    A condition the caller gave (:class:`ConditionFailedError`) is not a conflict: it may
    never hold, however often the caller retries."""


class ItemExistsError(_HoldsItem, ConflictError):
    """An insert (or a key move) found an item with the same primary key already stored:
    another writer stored it; nothing of this write was stored. ``item`` is the stored
    entity when DynamoDB returned it (``None``: not returned, or not of this class)."""


class ItemNotFoundError(_KeyedError, LookupError):
    """An update or delete by key found no item (it was never stored, or is gone: dynaorm
    read nothing to tell), or ``Query.one()`` found nothing. Not a conflict: retrying
    does not help (a web handler answers 404)."""


class ItemGoneError(ItemNotFoundError, ConflictError):
    """A write planned on a read of the item (an update or delete of a loaded object, an
    update that read the item first) found it gone: another writer deleted it since;
    nothing of this write was stored. Also an :class:`ItemNotFoundError`."""


class ConcurrentModificationError(_HoldsItem, ConflictError):
    """Another writer changed the stored values that this write was conditioned on (the
    optimistic condition on the loaded values or version failed, or an expected
    ``version`` was not the loaded one); nothing was stored. ``item`` is the stored
    entity when DynamoDB returned it with the failure (its current version: a 412's ETag),
    else ``None``."""


class UniqueConstraintError(DynaormError):
    """A unique value is already claimed by another item.

    ``field``/``value`` name the first violation; ``violations`` lists them all.
    """

    def __init__(self, entity: type[Any], violations: list[tuple[str, Any]],
                 key: dict[str, str] | None = None, hint: str = ""):
        self.entity = entity
        """The entity class whose commit claimed the value."""
        self.key = key
        """The table key of the object that claimed it, when known."""
        self.violations = list(violations)
        """Every ``(field, value)`` already taken, in declaration order."""
        self.field, self.value = self.violations[0]
        self.table = table_of(entity)
        """The name of the table whose guard item holds the value."""
        names = ", ".join(f"{f}={v!r}" for f, v in self.violations)
        where = f" {key}" if key else ""
        super().__init__(_on_table(
            f"{entity.__name__}{where}: unique value already taken: {names}"
            + (f" ({hint})" if hint else ""), self.table))


class TransactionConflictError(DynaormError):
    """The transaction kept conflicting with another in-flight transaction after retries."""


class TransactionTooLargeError(DynaormError):
    """The commit needs more than 100 actions or a request over 4 MB; nothing was sent."""


class ExpressionTooLargeError(DynaormError):
    """A write's expression is over DynamoDB's limits (4 KB each; a condition, also 300
    operators); nothing was sent: the error names the way out."""


class ConditionTooLargeError(ExpressionTooLargeError):
    """A write's condition is over DynamoDB's limits (4 KB, 300 operators): another
    writer's item conditioned whole; nothing was sent (declare its lock, ``Meta.lock``)."""


class ItemTooLargeError(DynaormError):
    """An item would exceed DynamoDB's 400 KB limit; nothing was sent."""


class MultipleResultsError(DynaormError):
    """``Query.one()`` found more than one item."""


class InvalidCursorError(DynaormError, ValueError):
    """A page cursor was tampered with or belongs to another query."""


class ScopeError(DynaormError):
    """A scoped session (``Session(table, scope={"tenant_id": "t1"})``) was asked to read or
    write outside its scope, or to use an entity or unique rule its scope cannot cover;
    nothing was sent."""


class InvalidValueError(DynaormError, ValueError):
    """A value DynamoDB would refuse (or an update that does not fit a field); nothing was
    sent. The message names the entity, the field and the key."""


class ConditionFailedError(_HoldsItem):
    """A condition the caller gave (``condition=``, ``where``, ``check``) did not hold.

    ``entity``, ``key`` and ``item`` (the stored entity at that moment, or ``None`` when
    there is no item) describe the first failure in session order; ``failures`` lists
    every failed action as ``(entity_class, key, item)``.
    """

    def __init__(self, message: str, *, entity: type[Any] | None = None,
                 key: dict[str, Any] | None = None, item: Any = None,
                 failures: list[tuple[type[Any] | None, dict[str, Any] | None, Any]]
                 | None = None):
        super().__init__(message, entity=entity, key=key, item=item)
        self.failures = list(failures) if failures is not None else [(entity, key, item)]
        """Every failed action as ``(entity_class, key, item)``, in session order."""


class LeaseError(ConditionFailedError):
    """A commit that holds a :class:`~dynaorm.Lease` was refused, nothing of it written:
    another holder's lease is live (an acquire), or another holder took it since this
    one's epoch (a hold, a renewal, a release). ``item`` is the lease as stored at that
    moment (``holder``, ``epoch``, ``until``), ``None`` when no lease row is stored."""


class IdempotencyMismatchError(DynaormError):
    """A commit's idempotency key was used before, within the table's ``receipts_ttl``, by
    a commit of other writes: nothing was written. ``key`` is the idempotency key."""

    def __init__(self, message: str, *, key: str):
        super().__init__(message)
        self.key = key
        """The idempotency key the commit was given."""


class OutcomeUnknownError(DynaormError):
    """A write may or may not have been applied (its response was lost and retries could
    not tell). ``operation`` is the API name; ``keys`` the table keys it wrote."""

    def __init__(self, message: str, *, operation: str,
                 keys: list[dict[str, Any]] | None = None,
                 tables: list[str] | None = None):
        super().__init__(message)
        self.operation = operation
        """The DynamoDB API name of the write (``"PutItem"``, ``"TransactWriteItems"``)."""
        self.keys = list(keys or [])
        """The table keys the write would have written (plain values)."""
        self.tables = list(tables or [])
        """The table of each key of :attr:`keys`, in the same order (a commit may write to
        several tables)."""


class RequestError(DynaormError):
    """A request failed for good after retries, for a reason no other error describes.

    ``operation`` is the API name (``"GetItem"``), ``code`` and ``message`` DynamoDB's (or
    the connection's) error. ``reasons`` holds a transaction's cancellation reasons in
    request order and ``item`` a single write's stored item, when returned.
    ``maybe_applied`` is true when some attempt may have been applied (a timeout or a
    dropped connection after sending, a 5xx); ``attempts`` counts the attempts made.
    """

    maybe_applied: bool = False
    """True when some attempt may have been applied (a timeout or a dropped connection after
    sending, a 5xx)."""
    attempts: int = 1
    """How many attempts were made."""
    request_id: str | None = None
    """The request id DynamoDB gave the answer that refused the request (its
    ``x-amzn-requestid``), on either wire; ``None`` when no answer came (a connection
    failure, a lost answer)."""
    response: dict[str, Any] | None = None
    """The refusing answer's ``ResponseMetadata`` (``HTTPStatusCode``, ``RequestId``,
    ``HTTPHeaders``), as successful answers carry it, when dynaorm's own wire read one
    (on ``wire="botocore"`` botocore's ``ClientError``, the error's cause, holds it)."""

    def __init__(self, operation: str, code: str, message: str,
                 reasons: list[Any] | None = None, item: dict[str, Any] | None = None
                 ):
        super().__init__(f"{operation} failed: {code}: {message}")
        self.operation = operation
        """The DynamoDB API name (``"GetItem"``)."""
        self.code = code
        """DynamoDB's error code (``"ValidationException"``), or the connection's failure."""
        self.message = message
        """DynamoDB's (or the connection's) error message."""
        self.reasons = list(reasons or [])
        """A transaction's cancellation reasons, in request order (empty otherwise): a
        :class:`~dynaorm.Reason` for each action, ``None`` where it was not the cause."""
        self.item = item
        """A single write's stored item when DynamoDB returned it (wire form), else ``None``."""


class TableNotFoundError(RequestError):
    """The table (or index) does not exist on the endpoint."""


class ThrottledError(RequestError):
    """DynamoDB throttled the request (``ThrottlingException``,
    ``ProvisionedThroughputExceededException``, ``RequestLimitExceeded``, or a transaction
    cancelled only for throttling): raised when the throttling outlived the retry budget
    (attempts or ``max_wait``); each throttled attempt's error, as hooks see it, is one
    too. Nothing was applied. ``reasons`` are DynamoDB's ``ThrottlingReasons``: one
    :class:`~dynaorm.ThrottlingReason` per table or index and limit it hit (empty when the
    answer named none)."""


class RequestNotSentError(RequestError):
    """The request never reached DynamoDB whole: no connection (refused, DNS, TLS), or the
    connection broke (or the server stopped reading) before all of it went out. That
    attempt cannot have been applied (``maybe_applied`` is false unless an earlier attempt
    of the request may have been); it is retried. ``code`` is ``"ConnectionError"``."""


class AnswerLostError(RequestError):
    """The request went out and no complete answer came back (the read timeout passed, or
    the connection broke in the middle of the answer): it may have been applied
    (``maybe_applied``); it is retried. ``code`` is ``"ConnectionError"``."""

    maybe_applied = True
    """Always true: the request went out, and may have been applied."""


class BadAnswerError(RequestError):
    """The request went out and the answer cannot be trusted: malformed HTTP framing, a
    head or body over the limits, a checksum (``x-amz-crc32``) that does not match, a
    compressed body, or a successful answer that is not a JSON object. It may have been
    applied (``maybe_applied``); it is retried. ``code`` is ``"ConnectionError"``."""

    maybe_applied = True
    """Always true: the request went out, and may have been applied."""


# -- bulk writes ---------------------------------------------------------------------


class BulkWriteError(DynaormError):
    """A ``save_many`` / ``delete_many`` that could not finish; some of it may be stored.

    ``written``: the objects (or, for ``delete_many(Entity, keys)``, the keys as given)
    known to be written, objects marked persisted (or deleted); ``not_written``: those
    known not to be (throttled to the end, unprocessed after the last round, refused by a
    condition because another writer changed the item since it was loaded); ``unknown``:
    those whose request may have been applied (its answer was lost, or a 5xx): read them
    to see. ``errors`` pairs each object or key not written or unknown with its error.
    """

    def __init__(self, message: str, *, written: list[Any], not_written: list[Any],
                 unknown: list[Any], errors: list[tuple[Any, DynaormError]] | None = None
                 ):
        super().__init__(message)
        self.written = list(written)
        """The objects (or keys as given) known to be written; objects are marked persisted (or
        deleted)."""
        self.not_written = list(not_written)
        """The objects or keys known not to be written (throttled to the end, unprocessed after
        the last round, or refused because another writer changed the item since it was
        loaded)."""
        self.unknown = list(unknown)
        """The objects or keys whose request may have been applied (its answer was lost, or a
        5xx): read them to see."""
        self.errors = list(errors or [])
        """``(object or key, error)`` for each one not written or unknown."""




class ItemDecodeError(_KeyedError, ValueError):
    """A stored item does not fit the class it is read as (a missing or mistyped field).

    ``entity`` is the class, ``key`` the item's table key; the pydantic error is the
    ``__cause__``. Raised by every read (get, query, scan, batch get, stream decoding);
    pydantic's ``ValidationError`` is raised only for objects the caller builds. A
    ``ValueError``, as pydantic's error is, so ``except ValueError`` keeps catching it.
    """


class ModelFileError(DynaormError, ValueError):
    """A model file ``dynaorm model --import`` cannot read (not JSON, not of its format, a
    design dynaorm refuses): ``place`` names where in the file (a JSON path such as
    ``$.DataModel[0].KeyAttributes``, or ``line 3, column 7``)."""

    def __init__(self, message: str, *, place: str):
        super().__init__(f"{place}: {message}")
        self.place = place
        """Where in the file the problem is."""


class SettingsError(DynaormError, ValueError):
    """A table or index setting DynamoDB would refuse (``warm_throughput=``,
    ``max_on_demand=``, ``pitr_days=``, ``deletion_protection=``, ``contributor_insights=``,
    ``tags=``), refused when the ``Table`` or ``GSI`` is declared, before anything is
    sent."""


class OffloadError(DynaormError):
    """A value kept in S3 (an ``Offloaded`` field of a table with ``offload=``) cannot be
    written or read: its upload failed after its retries (raised before the commit is
    sent: nothing of it is stored, and what it uploaded is removed), or the object a row
    references is missing or holds other bytes than the reference says (a dangling
    reference: ``dynaorm check`` reports it; no read returns another value in its place).
    ``uri`` names the object (``s3://bucket/key``; ``None``: not one object)."""

    def __init__(self, message: str, *, uri: str | None = None):
        super().__init__(message)
        self.uri = uri
        """The S3 object at fault (``s3://bucket/key``), if one is."""


def unreadable(message: str, av: Any) -> DynaormError:
    """The error of a stored value ``av`` a rule cannot read: an
    :class:`OffloadError` naming the object it was read from, if it was (a value kept in
    S3), else a :class:`DynaormError`."""
    uri = getattr(av, "uri", None)
    return DynaormError(message) if uri is None else OffloadError(message, uri=uri)


class LakeError(DynaormError):
    """An export cannot be committed to the analytics lake (``jobs.export(...,
    format="iceberg")``): a model change Iceberg's schema evolution cannot follow (the
    message names the table, the column and the change), an export older than what the
    table holds (a change set out of order, or a full export older than the table's rows),
    a change set starting after the table's rows, a catalog that cannot be loaded, or a
    commit that lost the race too often. Raised before the table's commit: the lake is left
    as it was, and the next export (once the cause is mended) applies."""
