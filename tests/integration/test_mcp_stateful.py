"""An agent driving random tool sequences (hypothesis stateful) against a model of the
table, with a second writer outside the server changing the same items between calls: every
tool answer agrees with the model, every query returns exactly the model's items, a call
naming another tenant always fails and changes nothing. Each example runs in a tenant of its
own (the server is scoped to it). On moto and DynamoDB Local, a handful of examples."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import anyio.from_thread
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test
from mcp import Client

import dynaorm.mcp
from dynaorm import Session
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from tests.conftest import wire_of
from tests.support.examples import examples
from tests.support.tenant_models import Tag, tenants

pytestmark = pytest.mark.sync_only  # (the server makes its own sessions)

TAGS = st.sampled_from(["a", "b", "c"])
NOTES = st.text(alphabet="xyz", max_size=3)


@pytest.fixture
def tdb(db: TestBackend, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    with use_tables(tenants, endpoint_url=db.endpoint_url, name_suffix=worker_suffix(),
                    wire=wire_of(request)) as tb:
        yield tb


class Agent(RuleBasedStateMachine):
    """The model: ``tag -> note`` of this example's tenant."""

    def __init__(self) -> None:
        super().__init__()
        self.tenant = f"t{uuid.uuid4().hex[:8]}"
        self.model: dict[str, str] = {}
        srv = dynaorm.mcp.server(tenants, writes=["Tag"], scope={"tenant_id": self.tenant})
        self._portal_cm = anyio.from_thread.start_blocking_portal()
        self.portal = self._portal_cm.__enter__()
        self._client_cm = self.portal.wrap_async_context_manager(Client(srv))
        self.client = self._client_cm.__enter__()
        self.outside = Session(tenants)  # the second writer, outside the server

    def teardown(self) -> None:
        self._client_cm.__exit__(None, None, None)
        self._portal_cm.__exit__(None, None, None)

    def call(self, name: str, args: dict[str, Any]) -> Any:
        result = self.portal.call(self.client.call_tool, name, args)
        said = "".join(getattr(c, "text", "") for c in result.content)
        assert "Traceback" not in said
        return result, said

    @rule(tag=TAGS, note=NOTES)
    def save(self, tag: str, note: str) -> None:
        result, said = self.call("save_tag", {"item": {"tag": tag, "note": note}})
        if tag in self.model:
            assert result.is_error and "ItemExistsError" in said
        else:
            assert not result.is_error, said
            self.model[tag] = note

    @rule(tag=TAGS, note=NOTES)
    def update(self, tag: str, note: str) -> None:
        result, said = self.call("update_tag", {"tag": tag, "set": {"note": note}})
        if tag in self.model:
            assert not result.is_error, said
            self.model[tag] = note
        else:
            assert result.is_error and "does not exist" in said

    @rule(tag=TAGS)
    def delete(self, tag: str) -> None:
        result, said = self.call("delete_tag", {"tag": tag})
        assert result.is_error == (tag not in self.model), said
        self.model.pop(tag, None)

    @rule(tag=TAGS)
    def get(self, tag: str) -> None:
        result, said = self.call("get_tag", {"tag": tag})
        assert not result.is_error, said
        item = result.structured_content["item"]
        assert (None if item is None else item["note"]) == self.model.get(tag)

    @rule(tag=TAGS, note=NOTES, delete=st.booleans())
    def second_writer(self, tag: str, note: str, delete: bool) -> None:
        if delete and tag in self.model:
            self.outside.delete(Tag, tenant_id=self.tenant, tag=tag)
            self.outside.commit()
            self.model.pop(tag, None)
        elif not delete:
            self.outside.save(Tag(tenant_id=self.tenant, tag=tag, note=note), overwrite=True)
            self.outside.commit()
            self.model[tag] = note

    @rule(tag=TAGS, note=NOTES)
    def another_tenant(self, tag: str, note: str) -> None:
        for name, args in (("get_tag", {"tenant_id": "other", "tag": tag}),
                           ("save_tag", {"item": {"tenant_id": "other", "tag": tag,
                                                  "note": note}}),
                           ("query_tag", {"tenant_id": "other"})):
            result, said = self.call(name, args)
            assert result.is_error and "ScopeError" in said
        assert Session(tenants).query(Tag, tenant_id="other").all() == []

    @invariant()
    def query_is_the_model(self) -> None:
        result, said = self.call("query_tag", {"limit": 100})
        assert not result.is_error, said
        assert {i["tag"]: i["note"] for i in result.structured_content["items"]} == self.model


def test_random_tool_sequences_agree_with_the_model(tdb: TestBackend) -> None:
    run_state_machine_as_test(Agent, settings=settings(
        max_examples=examples(6), stateful_step_count=8, deadline=None,
        suppress_health_check=list(HealthCheck)))
