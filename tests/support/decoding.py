"""The wire's decoding of an answer's bytes as it was before de1ecdc, the reference the
decoding shortcuts are compared with (tests/unit/test_answer_decoding.py,
tests/equivalence/test_read_decoding.py): both binary tags (or a backslash: a tag may be
spelt with an escape) looked for in the bytes, then every ``null`` member of the top level
dropped wherever the bytes hold a ``null``."""

from __future__ import annotations

import binascii
import json
from typing import Any

from dynaorm.values.codec import binary_from_json


def old_decode(body: bytes) -> dict[str, Any]:
    """``decode`` as it was before de1ecdc (verbatim but for the name and the fix of an
    escaped binary tag, see tests/unit/test_answer_decoding.py's
    ``test_an_escaped_binary_tag_reads_as_botocores_wire_reads_it``:
    a backslash in the body also converts)."""
    if not body:
        return {}
    try:
        data = json.loads(body.decode("utf-8"))
        if b'"B"' in body or b'"BS"' in body or b"\\" in body:
            data = binary_from_json(data)
        if b"null" in body and isinstance(data, dict):
            data = {k: v for k, v in data.items() if v is not None}
    except (binascii.Error, RecursionError) as exc:
        raise ValueError(f"not a DynamoDB answer: {exc}") from exc
    if not isinstance(data, dict):
        raise ValueError(f"not a DynamoDB answer: a JSON {type(data).__name__}")
    return data
