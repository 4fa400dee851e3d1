"""Type aliases shared across modules."""

from collections.abc import Callable
from typing import Any

#: One DynamoDB AttributeValue in wire form, e.g. ``{"S": "abc"}``.
AttributeValue = dict[str, Any]
#: An item (or key) in wire form.
Item = dict[str, AttributeValue]
#: A primary key in plain strings: ``{"pk": "USER#1", "sk": "PROFILE"}``.
PlainKey = dict[str, str]
#: What reads an answer's checked bytes itself (a read's objects validated straight from
#: them), or ``None`` to decline (the answer decodes as always): see
#: :class:`~dynaorm.protocol.steps.Send`.
Reader = Callable[[bytes], dict[str, Any] | None]
