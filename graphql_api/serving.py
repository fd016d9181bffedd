"""How uvicorn serves the app: its HTTP parser, its event loop and the header-timeout guard.

httptools (a C parser) on uvloop by default, issue 12 lever 5; HTTP_IMPLEMENTATION=h11 keeps
the pure-Python parser on asyncio's own loop. Either way the protocol is our subclass that
closes connections whose request head does not arrive in time (limits/header_timeout.py).
One place for ``server.py run`` (one process or workers) and the bench's server.
"""

from __future__ import annotations

from typing import Any

from graphql_api.config import ApiSettings, HttpImplementation
from graphql_api.limits.header_timeout import header_timeout_protocol, protocol_path

_LOOPS: dict[HttpImplementation, str] = {"httptools": "uvloop", "h11": "asyncio"}


def uvicorn_options(settings: ApiSettings) -> dict[str, Any]:
    """``uvicorn.run``/``uvicorn.Config`` options for an app built in this process."""
    implementation = settings.http_implementation
    return {
        "http": header_timeout_protocol(settings.header_timeout_seconds, implementation),
        "loop": _LOOPS[implementation],
    }


def worker_options(settings: ApiSettings) -> dict[str, Any]:
    """The same for ``--workers N``: spawned workers import the protocol by path, so it has
    the default header timeout (limits/header_timeout.py)."""
    implementation = settings.http_implementation
    return {"http": protocol_path(implementation), "loop": _LOOPS[implementation]}
