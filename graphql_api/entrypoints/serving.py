"""How uvicorn serves the app: its HTTP parser, its event loop and the guards on request heads.

httptools (a C parser) on uvloop by default; HTTP_IMPLEMENTATION=h11 keeps
the pure-Python parser on asyncio's own loop. Either way the protocol is our subclass that
bounds a request head's time and size (limits/protocols.py); WebSockets on uvicorn's
sans-I/O protocol with our close at shutdown, each message bounded like a body. One place for ``server.py run``
(one process or workers) and the bench's server.
"""

from __future__ import annotations

from typing import Any, Final

from graphql_api.entrypoints.websocket_protocol import WEBSOCKET_PROTOCOL
from graphql_api.limits.protocols import configured
from graphql_api.settings.api import ApiSettings, HttpImplementation

_LOOPS: dict[HttpImplementation, str] = {"httptools": "uvloop", "h11": "asyncio"}
# Spawned workers import their protocol, built from the settings they load.
WORKER_PROTOCOL: Final = "graphql_api.entrypoints.worker_protocol:Protocol"
# How long an idle keep-alive connection stays open. A client reuses an idle connection it
# believes open (Node's fetch for up to 4 s, browsers and HTTP libraries longer); a server
# that closes first races it, and the request written as the close arrives fails
# ("other side closed"): uvicorn's default of 5 s did, a few times a day. So the server waits
# longer than common clients, as load balancers advise of their targets (75 s, nginx's
# default too); an idle connection costs only its socket and a timer.
IDLE_KEEP_ALIVE_SECONDS: Final = 75


def _common(settings: ApiSettings) -> dict[str, Any]:
    return {
        "loop": _LOOPS[settings.http_implementation],
        "timeout_keep_alive": IDLE_KEEP_ALIVE_SECONDS,
        # h11's own bound on a head (16 kB, answered with a plain 400) no lower than ours (431).
        "h11_max_incomplete_event_size": settings.max_head_bytes,
        # A WebSocket message is bounded as an HTTP body is (the socket handler checks it too,
        # for servers other than this one); uvicorn's own default is 16 MiB.
        "ws_max_size": settings.max_body_bytes,
        # Closes with 1001 and our reason at shutdown (not uvicorn's 1012 without one).
        "ws": WEBSOCKET_PROTOCOL,
    }


def uvicorn_options(settings: ApiSettings) -> dict[str, Any]:
    """``uvicorn.run``/``uvicorn.Config`` options for an app built in this process."""
    return {"http": configured(settings), **_common(settings)}


def worker_options(settings: ApiSettings) -> dict[str, Any]:
    """The same for ``--workers N``: each spawned worker builds the protocol from its settings."""
    return {"http": WORKER_PROTOCOL, **_common(settings)}
