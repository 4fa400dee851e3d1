"""What an :class:`~dynaorm.Attempt` says of its answer, without a backend: its request id
and HTTP status, from a response, from the error answer a failure was mapped from, or
none when there was no answer. The hooks on engines: ``integration/test_hooks.py``;
tracing: ``integration/test_tracing.py``."""

from __future__ import annotations

from typing import Any

from dynaorm import Attempt, RequestError


def _failed(cause: Any) -> RequestError:
    error = RequestError("GetItem", "ThrottlingException", "slow down")
    error.__cause__ = cause
    return error


class _ErrorAnswer(Exception):
    def __init__(self, response: dict[str, Any]) -> None:
        super().__init__("error answer")
        self.response = response


META = {"ResponseMetadata": {"RequestId": "R1", "HTTPStatusCode": 400}}


def test_an_answered_attempt_has_its_answers_id_and_status() -> None:
    attempt = Attempt("GetItem", {}, 1, sent=True,
                      response={"ResponseMetadata": {"RequestId": "R0",
                                                     "HTTPStatusCode": 200}})
    assert (attempt.request_id, attempt.status_code) == ("R0", 200)


def test_a_failed_attempt_reads_the_error_answer_it_was_mapped_from() -> None:
    for cause in (_ErrorAnswer(dict(META)), _ErrorAnswer({"Error": {}, **META})):
        attempt = Attempt("GetItem", {}, 1, sent=True, error=_failed(cause))
        assert (attempt.request_id, attempt.status_code) == ("R1", 400)


def test_an_error_carrying_its_answer_is_read_too() -> None:
    error = _failed(None)
    error.response = dict(META)  # type: ignore[attr-defined]
    attempt = Attempt("GetItem", {}, 1, sent=True, error=error)
    assert (attempt.request_id, attempt.status_code) == ("R1", 400)


def test_no_answer_no_id_and_no_status() -> None:
    lost = Attempt("GetItem", {}, 1, sent=True, error=_failed(OSError("reset")))
    assert (lost.request_id, lost.status_code) == (None, None)
    answered_by_a_hook = Attempt("GetItem", {}, 1, response={"Item": {}})
    assert (answered_by_a_hook.request_id, answered_by_a_hook.status_code) == (None, None)
    hostile = Attempt("GetItem", {}, 1, sent=True,
                      response={"ResponseMetadata": "not a mapping"})
    assert hostile.request_id is None and hostile.status_code == 200


def test_an_answer_without_metadata_from_a_wire_is_a_200() -> None:
    """A wire returns an answer only for a 2xx, and DynamoDB's is a 200."""
    attempt = Attempt("GetItem", {}, 1, sent=True, response={})
    assert (attempt.request_id, attempt.status_code) == (None, 200)


def test_metadata_not_of_botocores_shape_says_nothing() -> None:
    for meta in ({"RequestId": 7, "HTTPStatusCode": "200"},
                 {"RequestId": {"x": 1}, "HTTPStatusCode": True}):
        attempt = Attempt("GetItem", {}, 1, sent=True,
                          error=_failed(_ErrorAnswer({"ResponseMetadata": meta})))
        assert (attempt.request_id, attempt.status_code) == (None, None)
