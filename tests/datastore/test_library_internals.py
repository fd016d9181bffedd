"""What the datastore's client takes from aiodynamo beyond its documented API.

One test per reliance, named for it, so an upgrade that moves it fails here, loudly and by
name, rather than as a slower client or a wrong signature somewhere else. Written against
aiodynamo 26.4 (the version the lock file pins).

The data plane runs on aiodynamo's public API (datastore/async_client.py) but for two module
attributes of its signer, ``aiodynamo.sign.derive_signing_key`` and ``aiodynamo.sign.Instant``,
which it replaces (``library_internals.memoise_signing``): the signatures it then makes are held
here to botocore's own signer's, byte for byte.
"""

from __future__ import annotations

import importlib.metadata
from datetime import UTC, datetime, timedelta

import botocore.auth
import pytest
from aiodynamo import sign
from aiodynamo.credentials import Key
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from datastore import async_client, library_internals


def test_aiodynamo__the_pinned_version() -> None:
    """The version the signing key's memo was checked against; an upgrade re-reads this file first."""
    assert importlib.metadata.version("aiodynamo") == "26.4"


def test_aiodynamo__sign__derive_signing_key__is_looked_up_by_name_at_each_signing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The memo is installed as ``aiodynamo.sign.derive_signing_key``: aiodynamo must still find
    it there each time it signs, or the memo would sit unused."""
    assert async_client.__name__  # importing the event loop's client installs the memo
    installed = library_internals.signing_key_deriver()
    assert isinstance(installed, library_internals.SigningKeyMemo)
    seen: list[str] = []

    def recording(key: Key, instant: sign.Instant, region: str) -> bytes:
        seen.append(region)
        return installed.derive(key, instant, region)

    monkeypatch.setattr(sign, "derive_signing_key", recording)
    sign.signed_dynamo_request(key=Key("AKID", "secret"), payload={}, action="GetItem", region="eu-west-1")

    assert seen == ["eu-west-1"]


def test_aiodynamo__sign__instant__is_looked_up_by_name_at_each_signing(monkeypatch: pytest.MonkeyPatch) -> None:
    """``SigningInstant`` is installed as ``aiodynamo.sign.Instant``, whose ``now()`` aiodynamo
    calls each time it signs: a request signed then carries the time it gives."""
    assert library_internals.signing_instant() is library_internals.SigningInstant
    assert type(sign.Instant.now()) is library_internals.SigningInstant
    pinned = datetime(2031, 1, 2, 3, 4, 5, tzinfo=UTC)

    class Pinned(library_internals.SigningInstant):
        @classmethod
        def now(cls) -> Pinned:
            return cls(pinned)

    monkeypatch.setattr(sign, "Instant", Pinned)
    signed = sign.signed_dynamo_request(key=Key("AKID", "secret"), payload={}, action="GetItem", region="eu-west-1")

    assert signed.headers["X-Amz-Date"] == "20310102T030405Z"
    assert "Credential=AKID/20310102/eu-west-1/dynamodb/aws4_request" in signed.headers["Authorization"]


def test_aiodynamo__signing_instant__the_strings_aiodynamos_instant_formats() -> None:
    stock = library_internals.SigningInstant.__mro__[1]
    assert stock.__module__ == "aiodynamo.sign" and stock.__name__ == "Instant"
    for at in (
        datetime(2026, 11, 26, 23, 59, 59, 999999, tzinfo=UTC),
        datetime(2026, 11, 27, tzinfo=UTC),
        datetime(2027, 1, 1, 0, 0, 1, tzinfo=UTC),
        datetime(999, 3, 4, 5, 6, 7, tzinfo=UTC),
    ):
        ours, theirs = library_internals.SigningInstant(at), stock(at)
        assert (ours.timestamp, ours.date, ours.timestamp, ours.date) == (theirs.timestamp, theirs.date) * 2


def test_aiodynamo__memoised_signature__byte_identical_to_botocores_signer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each request aiodynamo signs through the memo and ``SigningInstant`` (its first signing
    with a secret, day and region, and the ones after, which the memo answers) carries the
    Authorization header botocore's SigV4Auth makes for the same request, time and credentials."""
    assert isinstance(library_internals.signing_key_deriver(), library_internals.SigningKeyMemo)
    assert library_internals.signing_instant() is library_internals.SigningInstant
    payload = {"TableName": "hr", "Key": {"PK": {"S": "ORG#A"}, "SK": {"S": "META"}}}
    compared = 0
    for access, secret in (("AKIDFIRST", "first/secret+key"), ("AKIDSECOND", "second-secret")):
        for region in ("eu-west-1", "us-east-2"):
            endpoint = sign.make_default_endpoint(region)
            for _ in range(3):
                signed = sign.signed_dynamo_request(
                    key=Key(access, secret), payload=payload, action="GetItem", region=region, endpoint=endpoint
                )
                at = datetime.strptime(signed.headers["X-Amz-Date"], "%Y%m%dT%H%M%SZ")
                monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda at=at: at)
                theirs = AWSRequest(
                    method="POST",
                    url=str(endpoint),
                    data=signed.body,
                    headers={name: signed.headers[name] for name in ("Content-Type", "X-Amz-Target")},
                )
                SigV4Auth(Credentials(access, secret), "dynamodb", region).add_auth(theirs)

                assert signed.headers["Authorization"] == theirs.headers["Authorization"]
                compared += 1
    assert compared == 12


def test_aiodynamo__signing_key_memo__answers_what_aiodynamo_derives() -> None:
    """Per secret, day and region (a session token plays no part in the key), through a day's end."""
    derive = sign.derive_signing_key
    original = derive.derive if isinstance(derive, library_internals.SigningKeyMemo) else derive
    memo = library_internals.SigningKeyMemo(original)
    midnight = datetime(2026, 11, 26, tzinfo=UTC)
    instants = [sign.Instant(midnight - timedelta(seconds=1)), sign.Instant(midnight), sign.Instant(midnight)]
    for secret in ("one", "two"):
        for region in ("eu-west-1", "eu-central-1"):
            for instant in instants:
                for token in (None, "session-token"):
                    key = Key("AKID", secret, token)
                    assert memo(key, instant, region) == original(key, instant, region)
    assert len({memo(Key("AKID", "one"), instant, "eu-west-1") for instant in instants}) == 2  # a day each


def test_aiodynamo__signing_key_memo__keeps_only_the_last_few() -> None:
    """Credentials rotate and each tenant's role session has its own: the memo stays small."""
    derive = sign.derive_signing_key
    original = derive.derive if isinstance(derive, library_internals.SigningKeyMemo) else derive
    memo = library_internals.SigningKeyMemo(original, kept=3)
    instant = sign.Instant.now()
    for n in range(20):
        key = Key("AKID", f"secret-{n}")
        assert memo(key, instant, "eu-west-1") == original(key, instant, "eu-west-1")
        assert len(memo) <= 3
    assert len(memo) == 3
