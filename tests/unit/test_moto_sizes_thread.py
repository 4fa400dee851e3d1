"""Red team (issue 59, point 4): moto's own item size check is off only on the thread
inside ``moto_sizes_unchecked()``: a client on another thread, sending to moto directly
(not through the emulator, which sizes items), is still refused past moto's limit."""

from __future__ import annotations

import threading
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from dynaorm.testing.private_apis import moto_sizes_unchecked

moto = pytest.importorskip("moto")


def test_the_switch_does_not_leak_to_another_thread() -> None:
    with moto.mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(TableName="t", BillingMode="PAY_PER_REQUEST",
                            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                            AttributeDefinitions=[{"AttributeName": "pk",
                                                   "AttributeType": "S"}])
        big = {"pk": {"S": "other"}, "blob": {"S": "x" * 500_000}}
        outcome: list[Any] = []
        inside, done = threading.Event(), threading.Event()

        def other() -> None:
            inside.wait(10)
            try:
                client.put_item(TableName="t", Item=big)
                outcome.append("stored")
            except ClientError as exc:
                outcome.append(exc.response["Error"]["Message"])
            done.set()

        thread = threading.Thread(target=other)
        thread.start()
        with moto_sizes_unchecked():
            inside.set()
            done.wait(30)
            client.put_item(TableName="t", Item={"pk": {"S": "mine"},
                                                 "blob": {"S": "x" * 406_000}})
        thread.join()
        assert outcome == ["Item size has exceeded the maximum allowed size"]
        assert "Item" in client.get_item(TableName="t", Key={"pk": {"S": "mine"}})
        with pytest.raises(ClientError, match="maximum allowed size"):  # (off only inside)
            client.put_item(TableName="t", Item={"pk": {"S": "after"},
                                                 "blob": {"S": "x" * 406_000}})
