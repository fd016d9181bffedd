"""One attempt against a real receiver on the loopback: signing verified by ``standardwebhooks``,
the outbound rules (private addresses, redirects, slow and huge answers) and the retry schedule."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from datastore.config import ConfigError
from datastore.kinds.webhook_entities import DeliveryStatus, WebhookDelivery, WebhookEndpoint
from datastore.values.ids import OrgId, new_id
from datastore.webhooks.endpoints import new_secret
from graphql_api.auth.outbound import FetchRefused, check_destination
from graphql_api.settings.webhooks import DEFAULT_SCHEDULE, WebhookSettings, schedule
from graphql_api.webhooks.attempt import Outcome, after_attempt, send
from tests.graphql_api.webhooks.receiver import Receiver

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
SETTINGS = WebhookSettings(retry_schedule=(1.0, 2.0, 4.0), attempt_timeout_seconds=2.0)


def endpoint(url: str, **changes: object) -> WebhookEndpoint:
    values: dict[str, object] = {
        "org_id": OrgId(new_id()),
        "endpoint_id": new_id(),
        "url": url,
        "event_types": ("employee.*",),
        "description": "",
        "enabled": True,
        "created_at": NOW,
        "version": 1,
        "secret": new_secret(),
        **changes,
    }
    return WebhookEndpoint(**values)  # type: ignore[arg-type]


def delivery(owner: WebhookEndpoint, attempts: int = 0) -> WebhookDelivery:
    return WebhookDelivery(
        org_id=owner.org_id,
        endpoint_id=owner.endpoint_id,
        event_id=new_id(),
        event_type="employee.create",
        entity_type="Employee",
        entity_id=new_id(),
        occurred_at=NOW,
        status=DeliveryStatus.PENDING,
        attempts=attempts,
        created_at=NOW,
        expires_at=NOW + timedelta(days=30),
        entity_version=1,
    )


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    made = Receiver().up()
    yield made
    made.down()


def test_send__a_receiver_verifying_with_standardwebhooks__verified_and_delivered(receiver: Receiver) -> None:
    hook = endpoint(receiver.url)
    receiver.secrets.append(hook.secret or "")
    outcome = send(delivery(hook), hook, SETTINGS, allow_private=True, now=datetime.now(UTC))
    assert outcome.delivered
    assert len(receiver.received) == 1 and receiver.received[0].verified
    assert receiver.received[0].body["type"] == "employee.create"


def test_send__during_a_rotation__both_secrets_sign(receiver: Receiver) -> None:
    old, new = new_secret(), new_secret()
    now = datetime.now(UTC)
    hook = endpoint(receiver.url, secret=new, previous_secret=old, previous_secret_until=now + timedelta(hours=24))
    receiver.secrets.append(old)  # a receiver that has not switched yet still verifies
    send(delivery(hook), hook, SETTINGS, allow_private=True, now=now)
    receiver.secrets[:] = [new]
    send(delivery(hook), hook, SETTINGS, allow_private=True, now=now)
    assert [each.verified for each in receiver.received] == [True, True]
    assert {each.signatures for each in receiver.received} == {2}
    # After the overlap only the new secret signs.
    later = endpoint(receiver.url, secret=new, previous_secret=old, previous_secret_until=now - timedelta(seconds=1))
    receiver.secrets[:] = [old]
    send(delivery(later), later, SETTINGS, allow_private=True, now=now)
    assert receiver.received[-1].signatures == 1 and not receiver.received[-1].verified


@pytest.mark.parametrize(
    "url", ["https://127.0.0.1/hook", "https://10.0.0.1/hook", "https://169.254.169.254/", "http://8.8.8.8/"]
)
def test_destination__outside_development__refused(url: str) -> None:
    with pytest.raises(FetchRefused):
        check_destination(url, allow_private=False)


def test_send__private_receiver_outside_development__refused_and_retried(receiver: Receiver) -> None:
    hook = endpoint(receiver.url.replace("http://", "https://"))
    outcome = send(delivery(hook), hook, SETTINGS, allow_private=False, now=datetime.now(UTC))
    assert outcome.answer is None
    assert "not public" in (outcome.error or "")
    assert receiver.received == []
    assert after_attempt(delivery(hook), outcome, SETTINGS, now=NOW).status is DeliveryStatus.PENDING


def test_send__a_redirect__not_followed_and_final(receiver: Receiver) -> None:
    receiver.status, receiver.headers = 302, {"Location": "http://169.254.169.254/latest/meta-data"}
    hook = endpoint(receiver.url)
    outcome = send(delivery(hook), hook, SETTINGS, allow_private=True, now=datetime.now(UTC))
    assert outcome.answer is not None and outcome.answer.status == 302
    assert len(receiver.received) == 1  # the Location was never asked for
    assert after_attempt(delivery(hook), outcome, SETTINGS, now=NOW).status is DeliveryStatus.FAILED


def test_send__a_slow_receiver__cut_off_at_the_timeout_and_retried(receiver: Receiver) -> None:
    receiver.stall_seconds = 5.0
    hook = endpoint(receiver.url)
    started = time.monotonic()
    outcome = send(delivery(hook), hook, SETTINGS, allow_private=True, now=datetime.now(UTC))
    assert time.monotonic() - started < 4.0
    assert outcome.answer is None and "longer than" in (outcome.error or "")
    assert after_attempt(delivery(hook), outcome, SETTINGS, now=NOW).status is DeliveryStatus.PENDING


def test_send__an_endless_answer__read_to_the_cap_and_kept_to_1_kib(receiver: Receiver) -> None:
    receiver.endless, receiver.status = True, 500
    hook = endpoint(receiver.url)
    outcome = send(delivery(hook), hook, SETTINGS, allow_private=True, now=datetime.now(UTC))
    assert outcome.answer is not None and outcome.answer.status == 500
    assert len(outcome.answer.body) == 1024
    recorded = after_attempt(delivery(hook), outcome, SETTINGS, now=NOW)
    assert recorded.status is DeliveryStatus.PENDING and len(recorded.last_error or "") <= 1100


def test_after_attempt__the_schedule__each_failure_waits_its_step_then_failed() -> None:
    hook = endpoint("http://127.0.0.1:1/")
    failed = Outcome(None, "could not be reached")
    current = delivery(hook)
    waits = []
    for _ in range(3):
        current = after_attempt(current, failed, SETTINGS, now=NOW)
        assert current.status is DeliveryStatus.PENDING and current.next_attempt_at is not None
        waits.append((current.next_attempt_at - NOW).total_seconds())
    assert waits == [1.0, 2.0, 4.0]
    assert after_attempt(current, failed, SETTINGS, now=NOW).status is DeliveryStatus.FAILED


def test_after_attempt__status_codes__408_429_5xx_retried_other_4xx_final() -> None:
    from graphql_api.auth.outbound import Answer

    hook = endpoint("http://127.0.0.1:1/")
    for status, expected in [(408, "PENDING"), (429, "PENDING"), (503, "PENDING"), (400, "FAILED"), (410, "FAILED")]:
        outcome = Outcome(Answer(status, None, b""), None)
        assert after_attempt(delivery(hook), outcome, SETTINGS, now=NOW).status.value == expected, status
    honoured = after_attempt(delivery(hook), Outcome(Answer(429, 120.0, b""), None), SETTINGS, now=NOW)
    assert honoured.next_attempt_at == NOW + timedelta(seconds=120)


def test_schedule__the_default_is_published_and_a_setting_replaces_it() -> None:
    assert schedule(None) == DEFAULT_SCHEDULE == (5.0, 300.0, 1800.0, 7200.0, 18000.0, 36000.0, 36000.0)
    assert schedule("0.5,1") == (0.5, 1.0)


def test_settings__webhooks_queue__the_dispatcher_off_and_the_queue_named() -> None:
    queued = WebhookSettings.from_env({"WEBHOOKS": "queue", "WEBHOOK_QUEUE_URL": "https://sqs.example/q"})
    assert (queued.enabled, queued.from_queue, queued.queue_url) == (False, True, "https://sqs.example/q")
    assert (WebhookSettings.from_env({}).enabled, WebhookSettings.from_env({"WEBHOOKS": "off"}).enabled) == (
        True,
        False,
    )
    with pytest.raises(ConfigError, match="WEBHOOKS must be on, off or queue"):
        WebhookSettings.from_env({"WEBHOOKS": "sqs"})
