"""Opaque, signed pagination cursors bound to a tenant and to the list they came from.

A cursor is ``base64url(json)`` + ``.`` + a truncated HMAC-SHA256 of it. The signed payload
holds the tenant, the list (connection name and its parent's id, plus the order) and the
DynamoDB start key; a cursor edited, forged, or carried to another tenant or list is
BAD_USER_INPUT.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from typing import Final

import orjson

from datastore.table.pagination import StartKey
from graphql_api.execution.errors import bad_input

SIGNATURE_BYTES: Final = 16


class CursorCodec:
    def __init__(self, secret: str) -> None:
        # A key of its own, so a cursor signature can never double as a token signature.
        self._key = hashlib.sha256(b"hr-cursor:" + secret.encode()).digest()

    def _sign(self, body: bytes) -> bytes:
        return hmac.new(self._key, body, hashlib.sha256).digest()[:SIGNATURE_BYTES]

    def encode(self, tenant: str, connection: str, start_key: StartKey) -> str:
        body = orjson.dumps({"t": tenant, "c": connection, "k": start_key}, option=orjson.OPT_SORT_KEYS)
        return f"{_b64(body)}.{_b64(self._sign(body))}"

    def decode(self, cursor: str, tenant: str, connection: str) -> StartKey:
        invalid = bad_input("after", "is not a valid cursor for this list")
        body_part, _, signature_part = cursor.partition(".")
        try:
            body = _unb64(body_part)
            signature = _unb64(signature_part)
        except (binascii.Error, ValueError):
            raise invalid from None
        if not hmac.compare_digest(signature, self._sign(body)):
            raise invalid
        try:
            payload = orjson.loads(body)
        except orjson.JSONDecodeError:
            raise invalid from None
        if not isinstance(payload, dict):
            raise invalid
        if payload.get("t") != tenant or payload.get("c") != connection:
            raise invalid
        start_key = payload.get("k")
        if not isinstance(start_key, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in start_key.items()
        ):
            raise invalid
        return start_key


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode((text + "=" * (-len(text) % 4)).encode("ascii"))
