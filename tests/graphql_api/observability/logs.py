"""Every log line the process writes meanwhile, formatted as production formats them."""

from __future__ import annotations

import io
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import orjson

from graphql_api.log_output import JsonFormatter

WAIT_SECONDS = 30.0
# The test's own HTTP client logs in this process too; the server never uses it.
CLIENT_LOGGERS = ("httpx", "httpcore")


def _server_record(record: logging.LogRecord) -> bool:
    return not record.name.startswith(CLIENT_LOGGERS)


class CapturedLines:
    def __init__(self, stream: io.StringIO) -> None:
        self._stream = stream

    def lines(self) -> list[dict[str, Any]]:
        return [orjson.loads(line) for line in self._stream.getvalue().splitlines()]

    def wait_for_access_line(self, request_id: str) -> list[dict[str, Any]]:
        """All lines so far, once the access line of ``request_id`` is among them.

        The access line is written after the response is sent, so it may come a moment after
        the client has the response; it is the request's last line.
        """
        deadline = time.monotonic() + WAIT_SECONDS
        while time.monotonic() < deadline:
            lines = self.lines()
            if any(line["logger"] == "hr.access" and line.get("requestId") == request_id for line in lines):
                return lines
            time.sleep(0.01)
        raise AssertionError(f"no access line for {request_id}: {self.lines()}")


@contextmanager
def captured_lines(level: int = logging.INFO) -> Iterator[CapturedLines]:
    """What the root logger writes at ``level`` and above (production's level), as JSON lines."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    handler.setLevel(level)
    handler.addFilter(_server_record)
    root = logging.getLogger()
    previous = root.level
    root.addHandler(handler)
    root.setLevel(level)
    try:
        yield CapturedLines(stream)
    finally:
        root.removeHandler(handler)
        root.setLevel(previous)
