"""One attempt of one delivery, and what its answer means for the delivery.

A 2xx is DELIVERED. Timeouts, failed connections, refused addresses and 408, 429 and 5xx
answers are retried at the schedule's next step, or later when the answer's ``Retry-After``
asks for longer (up to a bound); once the schedule runs out the delivery is FAILED. Any other
answer (a 3xx: no redirect is followed; a 4xx) is final: FAILED at once.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from datastore.kinds.webhook_entities import DeliveryStatus, WebhookDelivery, WebhookEndpoint
from graphql_api.auth.outbound import Answer, FetchRefused, post
from graphql_api.settings.webhooks import WebhookSettings
from graphql_api.webhooks import message

RETRIED_STATUSES = frozenset({408, 429})


@dataclass(frozen=True, slots=True)
class Outcome:
    """An attempt's result: the answer (None when none came) or why there was none."""

    answer: Answer | None
    error: str | None

    @property
    def delivered(self) -> bool:
        return self.answer is not None and 200 <= self.answer.status < 300

    @property
    def retryable(self) -> bool:
        if self.answer is None:
            return True
        status = self.answer.status
        return status in RETRIED_STATUSES or status >= 500


def send(
    delivery: WebhookDelivery,
    endpoint: WebhookEndpoint,
    settings: WebhookSettings,
    *,
    allow_private: bool,
    now: datetime,
) -> Outcome:
    """POST the delivery to the endpoint's URL, signed (blocking: run it off the event loop)."""
    payload = message.body(delivery)
    try:
        signed = message.headers(delivery, endpoint, payload, now)
        answer = post(
            endpoint.url,
            payload,
            signed,
            allow_private=allow_private,
            timeout=settings.attempt_timeout_seconds,
            max_bytes=settings.max_answer_bytes,
            keep=settings.kept_answer_bytes,
        )
    except (FetchRefused, ValueError) as refused:
        return Outcome(None, str(refused))
    return Outcome(answer, None)


def after_attempt(
    delivery: WebhookDelivery, outcome: Outcome, settings: WebhookSettings, *, now: datetime
) -> WebhookDelivery:
    """The delivery as the attempt leaves it."""
    attempts = delivery.attempts + 1
    answer = outcome.answer
    error = outcome.error
    if answer is not None and not outcome.delivered:
        excerpt = answer.body.decode("utf-8", "replace")
        error = f"HTTP {answer.status}" + (f": {excerpt}" if excerpt else "")
    done = replace(
        delivery,
        attempts=attempts,
        last_attempt_at=now,
        last_status_code=None if answer is None else answer.status,
        last_error=None if outcome.delivered else error,
    )
    if outcome.delivered:
        return replace(done, status=DeliveryStatus.DELIVERED, next_attempt_at=None)
    schedule = settings.retry_schedule
    # Retries are counted from the first attempt: the n-th failure waits schedule[n-1].
    step = attempts - 1
    if not outcome.retryable or step >= len(schedule):
        return replace(done, status=DeliveryStatus.FAILED, next_attempt_at=None)
    wait = schedule[step]
    if answer is not None and answer.retry_after is not None:
        wait = max(wait, min(answer.retry_after, settings.max_retry_after_seconds))
    return replace(done, status=DeliveryStatus.PENDING, next_attempt_at=now + timedelta(seconds=wait))
