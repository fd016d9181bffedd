"""The probes of datastore/aws/probe.py on the event loop, against DynamoDB Local through a proxy
that refuses connections until told otherwise."""

from __future__ import annotations

import asyncio
import threading

from yarl import URL

from datastore.aws.client import Mirror
from datastore.aws.probe import probing, wait_until_answering
from datastore.config import DatastoreSettings
from tests.tcp_proxy import TcpProxy


def waited(mirror: Mirror, announce: list[str], accept_after_announcing: TcpProxy | None = None) -> int:
    """``wait_until_answering`` on ``mirror``'s probe client; the proxy listens again 0.3 s after
    the announcement."""
    probe = probing(mirror)

    def announced() -> None:
        announce.append("waiting")
        if accept_after_announcing is not None:
            threading.Timer(0.3, accept_after_announcing.accept).start()

    async def wait() -> int:
        try:
            return await wait_until_answering(probe, announce=announced, first_delay=0.05)
        finally:
            await probe.aclose()

    return asyncio.run(wait())


def test_wait_until_answering__refused_then_listening__announced_once_then_answered(
    settings: DatastoreSettings,
) -> None:
    port = URL(settings.endpoint_url or "").port
    assert port is not None
    with TcpProxy(port) as proxy:
        proxy.refuse()
        mirror = Mirror.of(settings, proxy.endpoint_url)
        announced: list[str] = []

        failures = waited(mirror, announced, accept_after_announcing=proxy)

        assert announced == ["waiting"]
        assert failures >= 1


def test_wait_until_answering__answering__no_announcement(settings: DatastoreSettings) -> None:
    announced: list[str] = []

    assert waited(Mirror.of(settings), announced) == 0
    assert announced == []
