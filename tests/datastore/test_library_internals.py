"""What the boto3 client's tuning takes from botocore beyond its documented API.

One test per reliance, named for it, so an upgrade that moves it fails here, loudly and by
name, rather than as a slower client or a wrong header somewhere else. Written against
botocore 1.44.8 (the version the lock file pins).

Three private names remain, each behind datastore/library_internals.py: ``BaseClient._endpoint``
(whose ``http_session`` sends each request: libcurl's, datastore/http_session.py),
``BaseClient._serializer`` (orjson's, datastore/fastserialize.py) and
``BaseClient._user_agent_creator`` (memoised, datastore/user_agent.py). The read path uses none
of them: it runs on aiodynamo's public API (datastore/async_client.py).
"""

from __future__ import annotations

from typing import Any

import botocore
from botocore.endpoint import Endpoint
from botocore.httpsession import URLLib3Session
from botocore.useragent import UserAgentString

from datastore import keys, library_internals
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
