"""What the datastore's client relies on beyond aiodynamo's documented API, each behind a function.

The data plane runs on aiodynamo's public API (datastore/async_client.py) but for two module
attributes of its signer, ``aiodynamo.sign``, which ``memoise_signing`` replaces: aiodynamo
derives the SigV4 signing key (four HMAC-SHA256) again for every call, from the secret, the
day and the region alone (``SigningKeyMemo`` remembers the last few), and formats the time of
a call five times (``SigningInstant`` formats it once): signing a call 19.8 -> 10.2 us
(``python -m bench.loop_call``; docs/design/speed.md).

Each reliance is held to its behaviour by tests/datastore/test_library_internals.py, which
names it and fails loudly when an upgrade moves it. Each function answers None or False when
the name is gone, so the client then keeps the library's own behaviour rather than failing.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, Final

from aiodynamo import sign
from aiodynamo.credentials import Key

# --- aiodynamo -------------------------------------------------------------------------

DeriveSigningKey = Callable[[Key, sign.Instant, str], bytes]

# Signing keys remembered: one per (secret, UTC day, region). A process signs with its own
# credentials, or with a role session per tenant (datastore/credentials.py), and each rotates:
# past this many the oldest is dropped, so a rotated secret is not kept for long. 16 covers
# the tenants a process serves at once at concurrency 16; past that, a miss costs what
# aiodynamo's own derivation does, and a microsecond more.
SIGNING_KEYS_KEPT: Final = 16


class SigningKeyMemo:
    """aiodynamo's ``derive_signing_key``, remembering its answer for the last few
    (secret, day, region): a pure function of them (SigV4's key derivation), so the signature
    is the one it makes itself, byte for byte."""

    def __init__(self, derive: DeriveSigningKey, kept: int = SIGNING_KEYS_KEPT) -> None:
        self.derive = derive
        self._kept = kept
        self._keys: dict[tuple[str, str, str], bytes] = {}
        self._lock = threading.Lock()  # for a miss only: loops in several threads may sign

    def __call__(self, key: Key, instant: sign.Instant, region: str) -> bytes:
        memo = (key.secret, instant.date, region)
        found = self._keys.get(memo)
        if found is None:
            found = self.derive(key, instant, region)
            with self._lock:
                while len(self._keys) >= self._kept:
                    del self._keys[next(iter(self._keys))]  # the oldest
                self._keys[memo] = found
        return found

    def __len__(self) -> int:
        return len(self._keys)


class SigningInstant(sign.Instant):
    """aiodynamo's ``Instant`` (the time a request is signed at), its strings formatted once:
    aiodynamo reads the timestamp three times and the date twice per signing, each a
    ``strftime``. The date is what the timestamp has before its ``T`` (``%Y%m%d`` of
    ``%Y%m%dT%H%M%SZ``)."""

    @functools.cached_property
    def timestamp(self) -> str:  # the same string, computed once
        return super().timestamp

    @functools.cached_property
    def date(self) -> str:
        return self.timestamp.partition("T")[0]


def signing_key_deriver() -> Any | None:
    """What aiodynamo's ``signed_dynamo_request`` derives its signing key with: the module
    attribute ``aiodynamo.sign.derive_signing_key``, looked up by name at each call."""
    return getattr(sign, "derive_signing_key", None)


def signing_instant() -> Any | None:
    """What ``signed_dynamo_request`` takes the time from (``Instant.now()``): the module
    attribute ``aiodynamo.sign.Instant``, looked up by name at each call."""
    return getattr(sign, "Instant", None)


def memoise_signing() -> bool:
    """Make aiodynamo derive each signing key once per (secret, day, region) and format each
    signing's time once; idempotent. False (aiodynamo's own behaviour kept) when a name is gone."""
    deriver, instant = signing_key_deriver(), signing_instant()
    if not isinstance(instant, type) or not issubclass(instant, sign.Instant) or not callable(deriver):
        return False
    if not isinstance(deriver, SigningKeyMemo):
        setattr(sign, "derive_signing_key", SigningKeyMemo(deriver))  # noqa: B010 (a module's attribute, on purpose)
    setattr(sign, "Instant", SigningInstant)  # noqa: B010
    return True
