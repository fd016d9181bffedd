"""Log output, configured in one place: JSON lines for machines, or text for a developer.

``configure_logging`` replaces the root logger's handlers (uvicorn's and AWS Lambda's
included), so every library's records come out in the one format on stdout. Fields that a
record carries in ``extra={"fields": {...}}`` become top-level keys of its JSON line.

On the ground floor of graphql_api (it imports nothing of it): every layer logs, from the
GraphQL errors up to the entry points, and the settings name its formats.
"""

from __future__ import annotations

import logging
import sys
from datetime import UTC, datetime
from typing import Any, Final, Literal

import orjson

LogFormat = Literal["json", "text"]
LOG_FORMATS: Final = ("json", "text")

# The attribute of a LogRecord holding its structured fields (``extra={"fields": ...}``).
FIELDS: Final = "fields"

TEXT_FORMAT: Final = "%(levelname)s %(name)s: %(message)s"


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, pid, message, the record's fields, and
    the stack trace (as one string) when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "pid": record.process,
            "message": record.getMessage(),
        }
        fields = getattr(record, FIELDS, None)
        if isinstance(fields, dict):
            line.update(fields)
        if record.exc_info:
            line["stack"] = self.formatException(record.exc_info)
        # default=str: a field that is not JSON (an exception, a path) is still written.
        return orjson.dumps(line, default=str).decode()


def formatter(log_format: LogFormat) -> logging.Formatter:
    return JsonFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT)


def configure_logging(log_format: LogFormat, level: int = logging.INFO) -> None:
    """Send every record at ``level`` and above to stdout in ``log_format``; idempotent."""
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(formatter(log_format))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    # uvicorn's loggers write through the root: one format, and no access log of its own
    # (graphql_api/observability/access_log.py writes the one line per request).
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        uvicorn_logger = logging.getLogger(name)
        uvicorn_logger.handlers.clear()
        uvicorn_logger.propagate = True
        uvicorn_logger.setLevel(logging.NOTSET)  # the root's level
    logging.getLogger("uvicorn.access").disabled = True
    # Mangum's own access line under Lambda, likewise; its errors still come through.
    logging.getLogger("mangum.http").setLevel(logging.WARNING)
    # A library that logs per call at INFO (botocore's credential lookup) stays quiet.
    logging.getLogger("botocore").setLevel(logging.WARNING)
