"""The private names of botocore the boto3 client's tuning still relies on, each behind one function here.

The read path no longer needs any of them: it runs on aiodynamo, through its public API
(datastore/async_client.py). The boto3 client keeps writes, sign-in, the CLI and the control
plane, and with them three tunings that botocore offers no public way to (datastore/client.py
installs them): libcurl as its HTTP session (datastore/http_session.py), orjson as its request
serialiser (datastore/fastserialize.py) and a memoised User-Agent (datastore/user_agent.py).
Each reliance is held to its behaviour by tests/datastore/test_library_internals.py, which
names it and fails loudly when an upgrade moves it; the lock file pins the botocore it was
written against. Each function answers None when the name is gone, so the client then keeps
botocore's own behaviour rather than failing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def endpoint(client: DynamoDBClient) -> Any | None:
    """The botocore Endpoint the client sends through (``BaseClient._endpoint``).

    Its ``http_session`` attribute (public on the Endpoint) is what sends each request.
    """
    return getattr(client, "_endpoint", None)


def http_session(client: DynamoDBClient) -> Any | None:
    """What sends the client's requests: ``send(AWSRequest) -> AWSResponse`` (``_endpoint.http_session``)."""
    return getattr(endpoint(client), "http_session", None)


def set_http_session(client: DynamoDBClient, session: Any) -> bool:
    """Send the client's requests through ``session``; False when the Endpoint is gone."""
    found = endpoint(client)
    if found is None or not hasattr(found, "http_session"):
        return False
    found.http_session = session
    return True


def serializer(client: DynamoDBClient) -> Any | None:
    """The serialiser that turns the client's parameters into a request dict (``BaseClient._serializer``)."""
    return getattr(client, "_serializer", None)


def set_serializer(client: DynamoDBClient, replacement: Any) -> bool:
    """Serialise the client's requests with ``replacement``; False when the attribute is gone."""
    if serializer(client) is None:
        return False
    client._serializer = replacement  # type: ignore[attr-defined]
    return True


def user_agent_creator(client: DynamoDBClient) -> Any | None:
    """What builds the client's User-Agent header (``BaseClient._user_agent_creator``, botocore 1.31+).

    botocore calls its ``to_string`` through the instance, both when it builds the request
    dict and in its ``request-created`` handler.
    """
    return getattr(client, "_user_agent_creator", None)
