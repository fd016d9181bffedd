"""Binary attribute values of a DynamoDB answer the event loop's client decoded itself.

The client decodes a successful body with orjson (datastore/aws/exchange.py); DynamoDB's JSON
carries binary values (``B``/``BS``) base64-encoded, and the datastore reads them as bytes,
as botocore handed them out, so the few answers that hold any are walked once more here.
"""

from __future__ import annotations

import base64
from typing import Any, Final

# Present in the raw body whenever a binary attribute value is; a string "B" matches too,
# which costs a walk that finds nothing, never a wrong answer.
BINARY_MARKERS: Final = (b'"B"', b'"BS"')


def decode_binaries(value: Any) -> None:
    """Turn every ``{"B": base64}`` and ``{"BS": [base64, ...]}`` below ``value`` into bytes.

    Only attribute values have a ``B``/``BS`` key with a string (list) value: an item's own
    attribute named ``B`` maps to a dict, and expression attribute names start with ``#``.
    """
    if isinstance(value, dict):
        for name, member in value.items():
            if name == "B" and isinstance(member, str):
                value[name] = base64.b64decode(member)
            elif name == "BS" and isinstance(member, list):
                value[name] = [base64.b64decode(entry) for entry in member]
            elif isinstance(member, dict | list):
                decode_binaries(member)
    elif isinstance(value, list):
        for member in value:
            if isinstance(member, dict | list):
                decode_binaries(member)
