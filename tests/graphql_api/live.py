"""A second live server for tests that need other settings than the session's."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import httpx
import uvicorn
from starlette.applications import Starlette

from datastore.dev.local import free_port
from graphql_api.settings.api import ApiSettings

# The two executors a query can run on (COMPILED_PLANS), for tests that try both.
EXECUTORS = {"plans": True, "graphql-core": False}


def with_settings(settings: ApiSettings, **changes: Any) -> ApiSettings:
    """``settings`` with ``changes``, skipping settings this build does not have."""
    return replace(settings, **{name: value for name, value in changes.items() if hasattr(settings, name)})


@contextmanager
def serving(app: Starlette, **options: Any) -> Iterator[httpx.Client]:
    """Serve ``app`` under uvicorn on a free port (``options`` go to uvicorn.Config); yields a client bound to it."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", **options))
    thread = threading.Thread(target=server.run, name="api-server-extra", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the API server did not start")
        time.sleep(0.02)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as http:
            yield http
    finally:
        server.should_exit = True
        thread.join(timeout=10)
