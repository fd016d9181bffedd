"""The event loop's HTTP exchange (datastore/aws/exchange.py) against real sockets on the loopback:
the CRC32 check, the read timeout, a refused connection, an error status, each retried as
many times as the boto3 client would and then one ``Unavailable`` in the datastore's words."""

from __future__ import annotations

import asyncio
import json
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from yarl import URL

from datastore.aws import calls
from datastore.aws.client import AsyncDynamo, Mirror, send
from datastore.dev.local import free_port
from datastore.errors import Unavailable
from datastore.kinds import layout
from datastore.values import ids
from tests.datastore.loopback import Server, serving

ATTEMPTS = 2
Answer = Callable[[bytes], Awaitable[tuple[int, dict[str, str], bytes] | None]]


def dynamo_at(url: str, *, read_timeout: float = 0.3) -> AsyncDynamo:
    mirror = Mirror(
        URL(url), "eu-west-1", connect_timeout=0.3, read_timeout=read_timeout, attempts=ATTEMPTS, pool_size=4
    )
    return AsyncDynamo(mirror, None)  # a loopback endpoint: signed with the local placeholder


@asynccontextmanager
async def http_server(answer: Answer) -> AsyncIterator[tuple[str, list[bytes]]]:
    """A one-route HTTP/1.1 server: ``answer(body)`` gives status, headers and body, or None to never answer."""

    async def route(server: Server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            answered = await answer(await server.request(reader))
            if answered is None:
                await asyncio.sleep(3600)
                return
            status, headers, payload = answered
            lines = [f"HTTP/1.1 {status} X", f"Content-Length: {len(payload)}"]
            lines += [f"{name}: {value}" for name, value in headers.items()]
            writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + payload)
            await writer.drain()

    async with serving(route) as (server, port):
        yield f"http://127.0.0.1:{port}", server.requests


# A tenant's employee key (tests/key_guard.py: every request stays in a named partition space).
KEY = layout.EMPLOYEE.key_at(ids.new_id(), ids.new_id()).wire()


def get_item(dynamo: AsyncDynamo) -> Awaitable[dict[str, Any]]:
    return send(dynamo.client(), "GetItem", {"TableName": "t", "Key": KEY})


def outcome(answer: Answer, *, read_timeout: float = 0.3) -> tuple[dict[str, Any] | Unavailable, int, calls.CallLog]:
    """What one GetItem comes to against a server answering ``answer``, and how many requests it received."""

    async def main() -> tuple[dict[str, Any] | Unavailable, int]:
        async with http_server(answer) as (url, received):
            dynamo = dynamo_at(url, read_timeout=read_timeout)
            try:
                return await get_item(dynamo), len(received)
            except Unavailable as error:
                return error, len(received)
            finally:
                await dynamo.aclose()

    with calls.listening() as log:
        result, requests = asyncio.run(main())
    return result, requests, log


ITEM: dict[str, Any] = {"Item": {**KEY, "B": {"B": "AAE="}}}
ITEM_BODY = json.dumps(ITEM).encode()


def test_answer__its_crc32_matches__decoded_binaries_as_bytes_and_recorded() -> None:
    async def good(_body: bytes) -> tuple[int, dict[str, str], bytes]:
        return 200, {"x-amz-crc32": str(zlib.crc32(ITEM_BODY))}, ITEM_BODY

    result, requests, log = outcome(good)

    assert result == {"Item": {**KEY, "B": {"B": b"\x00\x01"}}}
    assert requests == 1
    assert log.operations() == ["GetItem"] and log.snapshot()[0].error is None


def test_answer__its_crc32_does_not_match__retried_then_unavailable_could_not_be_reached() -> None:
    async def garbled(_body: bytes) -> tuple[int, dict[str, str], bytes]:
        return 200, {"x-amz-crc32": str(zlib.crc32(ITEM_BODY) ^ 1)}, ITEM_BODY

    result, requests, log = outcome(garbled)

    assert isinstance(result, Unavailable)
    assert str(result) == "DynamoDB could not be reached" and not result.maybe_written
    assert "CRC32" in (result.cause or "")
    assert requests == ATTEMPTS
    assert log.snapshot()[0].error is not None


def test_no_answer__within_the_read_timeout__retried_then_unavailable_did_not_answer_in_time() -> None:
    async def never(_body: bytes) -> None:
        return None

    result, requests, _log = outcome(never, read_timeout=0.2)

    assert isinstance(result, Unavailable)
    assert str(result) == "DynamoDB did not answer in time"
    assert requests == ATTEMPTS


def test_throttled__every_attempt__unavailable_throttling_with_dynamodbs_code() -> None:
    body = json.dumps({"__type": "com.amazonaws.dynamodb.v20120810#ThrottlingException", "message": "slow"})

    async def throttled(_body: bytes) -> tuple[int, dict[str, str], bytes]:
        return 400, {"Content-Type": "application/x-amz-json-1.0"}, body.encode()

    result, requests, _log = outcome(throttled)

    assert isinstance(result, Unavailable)
    assert str(result) == "DynamoDB is throttling requests" and result.cause == "ThrottlingException"
    assert requests == ATTEMPTS


def test_server_error__every_attempt__unavailable_failed_to_answer() -> None:
    body = json.dumps({"__type": "com.amazonaws.dynamodb.v20120810#InternalServerError", "message": "oops"})

    async def failing(_body: bytes) -> tuple[int, dict[str, str], bytes]:
        return 500, {}, body.encode()

    result, requests, _log = outcome(failing)

    assert isinstance(result, Unavailable)
    # aiodynamo keeps no body for a 5xx: the server log's cause is its error's name.
    assert str(result) == "DynamoDB failed to answer" and result.cause == "InternalDynamoError"
    assert requests == ATTEMPTS


def test_refused__nothing_listening__unavailable_could_not_be_reached_nothing_sent() -> None:
    async def main() -> Unavailable:
        dynamo = dynamo_at(f"http://127.0.0.1:{free_port()}")
        try:
            await get_item(dynamo)
        except Unavailable as error:
            return error
        finally:
            await dynamo.aclose()
        raise AssertionError("a refused connection answered")

    error = asyncio.run(main())

    assert str(error) == "DynamoDB could not be reached" and not error.maybe_written
    assert (error.cause or "").startswith("NotSent")


def test_closed__a_call_after_the_loops_shutdown__unavailable_and_no_connection_opened() -> None:
    """A load a request left running past its deadline, trying again after the app's lifespan
    closed the loop's connections: DynamoDB unreachable, nothing sent, no session left unclosed."""

    async def answer(_body: bytes) -> tuple[int, dict[str, str], bytes]:
        return 200, {}, ITEM_BODY

    async def main() -> tuple[Unavailable | None, int]:
        async with http_server(answer) as (url, received):
            dynamo = dynamo_at(url)
            await get_item(dynamo)
            await dynamo.aclose()
            try:
                await get_item(dynamo)
            except Unavailable as error:
                return error, len(received)
            return None, len(received)

    error, requests = asyncio.run(main())

    assert error is not None and str(error) == "DynamoDB could not be reached"
    assert (error.cause or "").startswith("NotSent")
    assert requests == 1


def test_refused_request__a_4xx__not_retried_and_named_refused() -> None:
    body = json.dumps({"__type": "com.amazonaws.dynamodb.v20120810#ValidationException", "message": "bad"})

    async def invalid(_body: bytes) -> tuple[int, dict[str, str], bytes]:
        return 400, {}, body.encode()

    result, requests, _log = outcome(invalid)

    assert isinstance(result, Unavailable)
    assert str(result) == "DynamoDB refused the request" and result.cause == "ValidationException"
    assert requests == 1


@pytest.mark.parametrize("header", ["not-a-number", ""])
def test_answer__a_garbled_crc32_header__treated_as_a_mismatch(header: str) -> None:
    async def garbled(_body: bytes) -> tuple[int, dict[str, str], bytes]:
        return 200, {"x-amz-crc32": header}, ITEM_BODY

    result, requests, _log = outcome(garbled)

    assert isinstance(result, Unavailable) and requests == ATTEMPTS
