"""What the boto3 client's tuning takes from botocore beyond its documented API.

One test per reliance, named for it, so an upgrade that moves it fails here, loudly and by
name, rather than as a slower client or a wrong header somewhere else. Written against
botocore 1.44.8 and aiodynamo 26.4 (the versions the lock file pins).

Three private names remain, each behind datastore/library_internals.py: ``BaseClient._endpoint``
(whose ``http_session`` sends each request: libcurl's, datastore/http_session.py),
``BaseClient._serializer`` (orjson's, datastore/fastserialize.py) and
``BaseClient._user_agent_creator`` (memoised, datastore/user_agent.py). The read path uses none
of them: it runs on aiodynamo's public API (datastore/async_client.py) but for one module
attributes of its signer, ``aiodynamo.sign.derive_signing_key`` and ``aiodynamo.sign.Instant``,
which it replaces (``library_internals.memoise_signing``): the signatures it then makes are held
here to botocore's own signer's, byte for byte.
"""

from __future__ import annotations

import importlib.metadata
from datetime import UTC, datetime, timedelta
from typing import Any

import botocore
import botocore.auth
import pytest
from aiodynamo import sign
from aiodynamo.credentials import Key
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.endpoint import Endpoint
from botocore.httpsession import URLLib3Session
from botocore.useragent import UserAgentString

from datastore import async_client, keys, library_internals
from datastore.client import make_client
from datastore.config import DatastoreSettings
from datastore.http_session import CurlSession


def test_botocore__the_pinned_version() -> None:
    """The version these reliances were checked against; an upgrade re-reads this file first."""
    assert botocore.__version__ == "1.44.8"


def test_botocore_client__private__endpoint__sends_through_its_http_session(
    settings: DatastoreSettings, table_name: str
) -> None:
    stock = make_client(settings, stock=True)
    found = library_internals.endpoint(stock)
    assert isinstance(found, Endpoint)
    assert isinstance(library_internals.http_session(stock), URLLib3Session)

    sent: list[Any] = []
    original = library_internals.http_session(stock)

    class Recording:
        def send(self, request: Any) -> Any:
            sent.append(request)
            return original.send(request)

    assert library_internals.set_http_session(stock, Recording())
    stock.get_item(TableName=table_name, Key=keys.Key("ORG#X", "META").wire())

    assert [request.headers["X-Amz-Target"] for request in sent] == [b"DynamoDB_20120810.GetItem"]


def test_botocore_client__private__endpoint__the_product_client_sends_through_libcurl(
    settings: DatastoreSettings,
) -> None:
    assert isinstance(library_internals.http_session(make_client(settings)), CurlSession)


def test_botocore_client__private__serializer__turns_parameters_into_the_request(
    settings: DatastoreSettings, table_name: str
) -> None:
    stock = make_client(settings, stock=True)
    current = library_internals.serializer(stock)
    model = stock.meta.service_model.operation_model("GetItem")
    params = {"TableName": "t", "Key": {"PK": {"S": "p"}, "SK": {"S": "s"}}}

    request = current.serialize_to_request(params, model)

    assert request["headers"]["X-Amz-Target"] == "DynamoDB_20120810.GetItem"
    seen: list[Any] = []

    class Wrapping:
        def serialize_to_request(self, parameters: Any, operation: Any) -> Any:
            seen.append(operation.name)
            return current.serialize_to_request(parameters, operation)

    assert library_internals.set_serializer(stock, Wrapping())
    stock.get_item(TableName=table_name, Key=keys.Key("ORG#X", "META").wire())

    assert seen == ["GetItem"]  # what the client sends is what its serialiser made


def test_botocore_client__private__user_agent_creator__builds_the_header_botocore_sends(
    settings: DatastoreSettings, table_name: str
) -> None:
    stock = make_client(settings, stock=True)
    creator = library_internals.user_agent_creator(stock)
    assert isinstance(creator, UserAgentString)
    sent: dict[str, str] = {}

    def capture(request: Any, **_: Any) -> None:
        sent["User-Agent"] = request.headers["User-Agent"].decode()
        sent["built"] = creator.to_string()  # this call's feature ids are registered by now

    stock.meta.events.register("before-send.dynamodb.GetItem", capture)
    stock.get_item(TableName=table_name, Key=keys.Key("ORG#X", "META").wire())

    assert sent["User-Agent"] == sent["built"]


# --- aiodynamo: its signing key, derived once per secret, day and region ----------------


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
