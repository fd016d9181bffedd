"""How webhooks are delivered: the retry schedule and the bounds, from WEBHOOK_* variables."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from datastore.config import ConfigError, env_float, env_int

# The published retry schedule: seconds to wait after the first attempt fails, after the
# second, and so on; once it runs out the delivery is FAILED. Eight attempts over about 28 hours.
DEFAULT_SCHEDULE: Final = (5.0, 300.0, 1800.0, 7200.0, 18000.0, 36000.0, 36000.0)


def schedule(raw: str | None) -> tuple[float, ...]:
    """WEBHOOK_RETRY_SCHEDULE: comma-separated seconds (``5,300,1800``); empty for the default."""
    if raw is None or not raw.strip():
        return DEFAULT_SCHEDULE
    try:
        values = tuple(float(part) for part in raw.split(","))
    except ValueError:
        raise ConfigError("WEBHOOK_RETRY_SCHEDULE must be comma-separated seconds, e.g. 5,300,1800") from None
    if any(value < 0 for value in values):
        raise ConfigError("WEBHOOK_RETRY_SCHEDULE must hold no negative delay")
    return values


@dataclass(frozen=True, slots=True)
class WebhookSettings:
    retry_schedule: tuple[float, ...] = DEFAULT_SCHEDULE
    # One attempt, all of it: resolving, connecting, sending, the answer.
    attempt_timeout_seconds: float = 15.0
    # The answer's body is read to this many bytes at most, and this many kept with the delivery.
    max_answer_bytes: int = 64 * 1024
    kept_answer_bytes: int = 1024
    # An endpoint that has answered nothing but failures for this long is disabled.
    disable_after_seconds: float = 3 * 24 * 3600.0
    # Longest a Retry-After is honoured for (a larger one waits this long).
    max_retry_after_seconds: float = 24 * 3600.0
    # Attempts in flight at once: per endpoint, per organisation, in all (threads).
    per_endpoint: int = 4
    per_organisation: int = 8
    in_all: int = 32
    # Pending deliveries looked at per endpoint per round (the oldest events).
    pending_window: int = 100
    # A round for every organisation with endpoints this often, reading the audit trail back
    # ``reorder_seconds`` from its cursor (a write's id is minted just before it commits);
    # the change feed's audit events start a round for their organisation at once.
    sweep_seconds: float = 10.0
    reorder_seconds: float = 10.0
    # The dispatcher's lease: one process per table delivers; a holder that stops renewing
    # is replaced once it expires.
    lease_seconds: float = 10.0
    # The in-process dispatcher. Off (WEBHOOKS=off, or =queue) no process of this server
    # delivers; with WEBHOOKS=queue AWS's functions do, from the queue (graphql_api/webhooks/queue.py).
    enabled: bool = True
    from_queue: bool = False
    # The SQS queue AWS's functions deliver from (WEBHOOK_QUEUE_URL, set by the template).
    queue_url: str | None = None
    # On AWS, how long a due delivery may go unattempted before the sweep sends its message
    # again: longer than a message may still be in the queue (visibility timeout times
    # maxReceiveCount, which the template sets this from).
    queue_lost_after_seconds: float = 900.0

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> WebhookSettings:
        return cls(
            retry_schedule=schedule(env.get("WEBHOOK_RETRY_SCHEDULE")),
            attempt_timeout_seconds=env_float(env, "WEBHOOK_ATTEMPT_TIMEOUT_SECONDS", 15.0),
            disable_after_seconds=env_float(env, "WEBHOOK_DISABLE_AFTER_SECONDS", 3 * 24 * 3600.0),
            per_endpoint=env_int(env, "WEBHOOK_CONCURRENCY_PER_ENDPOINT", 4),
            per_organisation=env_int(env, "WEBHOOK_CONCURRENCY_PER_ORGANISATION", 8),
            in_all=env_int(env, "WEBHOOK_CONCURRENCY", 32),
            sweep_seconds=env_float(env, "WEBHOOK_SWEEP_SECONDS", 10.0),
            reorder_seconds=env_float(env, "WEBHOOK_REORDER_SECONDS", 10.0),
            lease_seconds=env_float(env, "WEBHOOK_LEASE_SECONDS", 10.0),
            enabled=mode(env) == "on",
            from_queue=mode(env) == "queue",
            queue_url=env.get("WEBHOOK_QUEUE_URL", "").strip() or None,
            queue_lost_after_seconds=env_float(env, "WEBHOOK_QUEUE_LOST_AFTER_SECONDS", 900.0),
        )


def mode(env: Mapping[str, str]) -> str:
    """WEBHOOKS: ``on`` (this server's dispatcher delivers), ``off`` (nothing here does) or
    ``queue`` (AWS's functions deliver from the SQS queue; this server's dispatcher is off)."""
    raw = env.get("WEBHOOKS", "on").strip().lower()
    found = {"on": "on", "true": "on", "1": "on", "off": "off", "false": "off", "0": "off", "queue": "queue"}.get(raw)
    if found is None:
        raise ConfigError("WEBHOOKS must be on, off or queue")
    return found
