"""AWS Lambda entry points of webhooks: the table's stream, the SQS queue, the sweep's schedule.

- ``stream_handler``: the table's stream (an event source mapping filtered to audit events):
  the outbox written, a message sent per due delivery;
- ``queue_handler``: the queue (an event source mapping with ReportBatchItemFailures): each
  message's delivery attempted, its failures named for SQS to send again;
- ``sweep_handler``: an EventBridge schedule: what the queue lost, sent again from the outbox.

(graphql_api/webhooks/queue_delivery.py.) Built once per execution environment from the
environment: the datastore's settings (the data roles), the webhooks' (WEBHOOK_*, the queue's
URL in WEBHOOK_QUEUE_URL) and HR_ENV, and nothing else: no token secret, no schema. The data
layout is checked as the API's functions check it: data in another layout stops the init.

Every invocation runs on one event loop, made at init and kept for the process (as Mangum's
is for the API's functions, lambda_handler.py), so the connections to DynamoDB made by the
first invocation serve every warm one. ``close`` is for whoever ends it (the tests).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

import boto3

from datastore.config import ConfigError, DatastoreSettings
from datastore.table.store import Datastore
from datastore.tenancy.scope import LayoutScope
from datastore.upkeep import layout_version
from graphql_api.log_output import configure_logging
from graphql_api.settings import process_environment
from graphql_api.settings.api import log_format
from graphql_api.settings.webhooks import WebhookSettings
from graphql_api.webhooks.queue import SqsQueue
from graphql_api.webhooks.queue_delivery import QueueDelivery

_env = process_environment()
_development = _env.get("HR_ENV", "development") == "development"
configure_logging(log_format(_env, _development))
_settings = WebhookSettings.from_env(_env)
if _settings.queue_url is None:
    raise ConfigError("set WEBHOOK_QUEUE_URL: the SQS queue webhooks are delivered from")
T = TypeVar("T")

_loop = asyncio.new_event_loop()


def _run(work: Coroutine[Any, Any, T]) -> T:
    return _loop.run_until_complete(work)


datastore = Datastore.connect(DatastoreSettings.from_env(_env))
_run(layout_version.check_at_start(datastore.table(LayoutScope()), serve_anyway=False))
delivery = QueueDelivery(
    datastore,
    _settings,
    SqsQueue(boto3.client("sqs"), _settings.queue_url),
    # Loopback receivers only in development, as the API's registration check allows them.
    allow_private=_development,
)


def stream_handler(event: dict[str, Any], _context: Any) -> dict[str, Any]:
    """One batch of stream records. An exception fails the batch, which Lambda retries."""
    return _run(delivery.from_stream(event))


def queue_handler(event: dict[str, Any], _context: Any) -> dict[str, Any]:
    """One batch of queue messages: ``batchItemFailures`` names those to receive again."""
    return _run(delivery.consume(event))


def sweep_handler(event: dict[str, Any], _context: Any) -> dict[str, Any]:
    return _run(delivery.sweep(event))


def close() -> None:
    """End this environment: its connections to DynamoDB on its loop, that loop, its threads
    and the boto3 clients made, if any (the tests import this module once per test)."""
    try:
        _run(datastore.aclose())
    finally:
        _loop.close()
        delivery.close()
        datastore.close()
