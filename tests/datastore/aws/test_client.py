"""The event loop's client (datastore/aws/client.py): what it takes of the settings, its
one attempt per aiodynamo request, and the credentials it signs with (a refresh never runs on the loop).

Signing per scope against a real STS is shown end to end by tests/datastore/aws/test_credentials.py
and tests/graphql_api/test_role_credentials.py, whose signature log reads both clients' requests.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from aiodynamo.credentials import Key
from aiodynamo.models import RetryTimeout
from botocore.credentials import Credentials, RefreshableCredentials

from datastore.aws.client import AsyncDynamo, Mirror, OneAttempt, ScopeKey, regional_endpoint
from datastore.aws.control_plane import make_client
from datastore.config import DatastoreSettings
from tests.server_commands import ROOT


def test_mirror__the_settings_endpoint_region_timeouts_attempts_and_pool(settings: DatastoreSettings) -> None:
    configured = replace(settings, max_attempts=5, connect_timeout=0.7, read_timeout=2.5, pool_size=33)
    client = make_client(configured)

    mirror = Mirror.of(configured)

    # Where the control plane's boto3 client connects, the data plane does too.
    assert str(mirror.endpoint) == client.meta.endpoint_url
    assert mirror.region == client.meta.region_name
    assert (mirror.connect_timeout, mirror.read_timeout) == (0.7, 2.5)
    assert mirror.attempts == 5
    assert mirror.pool_size == 33
    assert str(Mirror.of(configured, "http://127.0.0.1:1").endpoint) == "http://127.0.0.1:1"


def test_mirror__no_endpoint__aws_regional_endpoint(settings: DatastoreSettings) -> None:
    assert str(Mirror.of(replace(settings, endpoint_url=None, region="eu-west-1")).endpoint) == (
        "https://dynamodb.eu-west-1.amazonaws.com"
    )
    assert regional_endpoint("cn-north-1") == "https://dynamodb.cn-north-1.amazonaws.com.cn"


def test_of__one_per_connection_settings(settings: DatastoreSettings) -> None:
    """Every Datastore on the same settings shares one client (its connections, hooks, observers)."""
    assert AsyncDynamo.of(Mirror.of(settings)) is AsyncDynamo.of(Mirror.of(replace(settings, table_name="other")))
    assert AsyncDynamo.of(Mirror.of(replace(settings, pool_size=settings.pool_size + 1))) is not AsyncDynamo.of(
        Mirror.of(settings)
    )


def test_client__aiodynamo_makes_one_attempt__the_policy_and_deadline_ride_with_it(settings: DatastoreSettings) -> None:
    """aiodynamo never retries a call itself: ``send`` makes the attempts (tests/datastore/aws/test_retries.py)."""
    dynamo = AsyncDynamo(Mirror.of(replace(settings, max_attempts=4)), None)

    async def attempts(config: OneAttempt) -> int:
        made = 0
        with pytest.raises(RetryTimeout):
            async for _ in config.attempts():
                made += 1
        return made

    config = dynamo.client(deadline=123.0).throttle_config
    assert isinstance(config, OneAttempt)
    assert (config.policy.standard.attempts, config.deadline) == (4, 123.0)
    assert asyncio.run(attempts(config)) == 1


def test_scope_key__fresh_credentials__read_on_the_loop() -> None:
    key = asyncio.run(ScopeKey(Credentials("AKIAFRESH", "secret", "token")).get_key(None))  # type: ignore[arg-type]

    assert key is not None and (key.id, key.secret, key.token) == ("AKIAFRESH", "secret", "token")


def test_scope_key__a_refresh_due__runs_on_a_thread_not_the_loop() -> None:
    refreshed_on: list[threading.Thread] = []

    def refresh() -> dict[str, str]:
        refreshed_on.append(threading.current_thread())
        expiry = datetime.now(UTC) + timedelta(hours=1)
        return {"access_key": "AKIAROLE", "secret_key": "s", "token": "t", "expiry_time": expiry.isoformat()}

    # Expired from the start: the first use refreshes, as a role session's first use does.
    stale = datetime.now(UTC) - timedelta(minutes=1)
    credentials = RefreshableCredentials("AKIAOLD", "s0", "t0", stale, refresh, "test")

    async def main() -> tuple[str | None, threading.Thread]:
        key = await ScopeKey(credentials).get_key(None)  # type: ignore[arg-type]
        return (None if key is None else key.id), threading.current_thread()

    key_id, loop_thread = asyncio.run(main())

    assert key_id == "AKIAROLE"
    assert len(refreshed_on) == 1 and refreshed_on[0] is not loop_thread


def test_scope_key__botocore_asked_once_a_reuse_window__a_refresh_signs_after_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Asking botocore reads its clock (dateutil's local time zone for the process's role:
    about 45 us); a Table's calls within ``REUSE_SECONDS`` sign with the key read first, and
    the next after it with what botocore holds then."""
    monkeypatch.setattr(ScopeKey, "REUSE_SECONDS", 0.2)
    now = [datetime.now(UTC)]
    clock_read: list[datetime] = []
    issued = iter(["AKIAFIRST", "AKIASECOND"])

    def clock() -> datetime:
        clock_read.append(now[0])
        return now[0]

    def refresh() -> dict[str, str]:
        expiry = now[0] + timedelta(hours=1)
        return {"access_key": next(issued), "secret_key": "s", "token": "t", "expiry_time": expiry.isoformat()}

    first = refresh()
    credentials = RefreshableCredentials(
        first["access_key"], "s", "t", now[0] + timedelta(hours=1), refresh, "test", time_fetcher=clock
    )
    scope_key = ScopeKey(credentials)

    async def key_ids(n: int) -> list[str]:
        return [key.id for key in [await scope_key.get_key(None) for _ in range(n)] if key is not None]  # type: ignore[arg-type]

    assert asyncio.run(key_ids(50)) == ["AKIAFIRST"] * 50
    asked_once = len(clock_read)
    assert 0 < asked_once <= 3  # one ask of botocore: its refresh checks, not one per call

    now[0] += timedelta(minutes=59)  # inside botocore's refresh window: its next ask refreshes
    assert asyncio.run(key_ids(1)) == ["AKIAFIRST"]  # within the reuse window
    assert len(clock_read) == asked_once
    time.sleep(0.25)
    assert asyncio.run(key_ids(3)) == ["AKIASECOND"] * 3


def test_scope_key__no_credentials__the_placeholder_only_where_one_is_given() -> None:
    """A local engine's requests are signed with a placeholder; AWS's fail without credentials."""
    placeholder = Key("local", "local")

    async def keys() -> tuple[Key | None, Key | None]:
        none: Any = None
        return await ScopeKey(None).get_key(none), await ScopeKey(None, placeholder=placeholder).get_key(none)

    assert asyncio.run(keys()) == (None, placeholder)


# In a fresh interpreter with the environment given: the key the process's requests are signed
# with, whether botocore's session was imported for it, then what botocore's own chain finds.
PROCESS_KEY_CHILD = """
import asyncio, json, sys
from datastore.aws.client import AsyncDynamo, Mirror
from datastore.config import DatastoreSettings
from graphql_api.settings import process_environment

dynamo = AsyncDynamo.of(Mirror.of(DatastoreSettings.from_env(process_environment())))
ours = asyncio.run(dynamo.client().credentials.get_key(None))
imported = "botocore.session" in sys.modules
import botocore.session
theirs = botocore.session.get_session().get_credentials()
frozen = theirs.get_frozen_credentials()
print(json.dumps({
    "ours": [ours.id, ours.secret, ours.token],
    "botocore": [frozen.access_key, frozen.secret_key, frozen.token],
    "refreshable": hasattr(theirs, "refresh_needed"),
    "botocore_imported": imported,
}))
"""


def process_key(credentials: dict[str, str]) -> dict[str, Any]:
    """``PROCESS_KEY_CHILD``'s answer with these AWS variables and no other (no profile either)."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("AWS_")}
    env.update({"AWS_CONFIG_FILE": "/nonexistent", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent"})
    # AWS's endpoint (a local engine never asks botocore's chain: tests/datastore/aws/test_local_engine.py),
    # over plain HTTP: an HTTPS one's CA bundle is botocore's to find. Nothing is sent to it.
    endpoint = "http://dynamodb.eu-west-1.amazonaws.com"
    env.update({"AWS_EC2_METADATA_DISABLED": "true", "DYNAMODB_ENDPOINT": endpoint, **credentials})
    result = subprocess.run(
        [sys.executable, "-c", PROCESS_KEY_CHILD], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    answer: dict[str, Any] = json.loads(result.stdout)
    return answer


@pytest.mark.parametrize(
    ("credentials", "token"),
    [
        ({"AWS_ACCESS_KEY_ID": "AKIAENV", "AWS_SECRET_ACCESS_KEY": "secret"}, None),
        (
            {"AWS_ACCESS_KEY_ID": "AKIAENV", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_SESSION_TOKEN": "session"},
            "session",
        ),
        # botocore reads AWS_SECURITY_TOKEN first; an empty one is not set.
        (
            {
                "AWS_ACCESS_KEY_ID": "AKIAENV",
                "AWS_SECRET_ACCESS_KEY": "secret",
                "AWS_SECURITY_TOKEN": "security",
                "AWS_SESSION_TOKEN": "session",
            },
            "security",
        ),
        (
            {
                "AWS_ACCESS_KEY_ID": "AKIAENV",
                "AWS_SECRET_ACCESS_KEY": "secret",
                "AWS_SECURITY_TOKEN": "",
                "AWS_SESSION_TOKEN": "session",
            },
            "session",
        ),
    ],
)
def test_process_key__in_the_environment__botocores_key_without_botocore(
    credentials: dict[str, str], token: str | None
) -> None:
    found = process_key(credentials)

    assert found["ours"] == ["AKIAENV", "secret", token]
    assert found["ours"] == found["botocore"]
    assert found["botocore_imported"] is False


def test_process_key__with_an_expiration__botocores_refreshable_credentials() -> None:
    """AWS_CREDENTIAL_EXPIRATION makes botocore's environment credentials refreshable: botocore's, then."""
    found = process_key(
        {
            "AWS_ACCESS_KEY_ID": "AKIAENV",
            "AWS_SECRET_ACCESS_KEY": "secret",
            "AWS_SESSION_TOKEN": "session",
            "AWS_CREDENTIAL_EXPIRATION": "2099-01-01T00:00:00Z",
        }
    )

    assert found["ours"] == ["AKIAENV", "secret", "session"] == found["botocore"]
    assert found["refreshable"] is True
    assert found["botocore_imported"] is True


def test_process_key__a_profile_named__botocore_reads_it(tmp_path: Path) -> None:
    """With AWS_PROFILE botocore reads the profile first (and refuses a missing one): botocore's, then."""
    config = tmp_path / "config"
    config.write_text("[profile other]\nregion = eu-west-1\n")
    found = process_key(
        {
            "AWS_ACCESS_KEY_ID": "AKIAENV",
            "AWS_SECRET_ACCESS_KEY": "secret",
            "AWS_PROFILE": "other",
            "AWS_CONFIG_FILE": str(config),
        }
    )

    assert found["ours"] == ["AKIAENV", "secret", None] == found["botocore"]
    assert found["botocore_imported"] is True


def test_mirror__environment_key__never_in_a_repr() -> None:
    settings = DatastoreSettings.from_env(
        {"AWS_ACCESS_KEY_ID": "AKIAENV", "AWS_SECRET_ACCESS_KEY": "s3cr3t-value", "AWS_SESSION_TOKEN": "t0ken-value"}
    )
    mirror = Mirror.of(settings, "http://127.0.0.1:1")

    assert mirror.key is not None and mirror.key.secret_key == "s3cr3t-value"
    for shown in (repr(settings), repr(mirror), repr(mirror.key), str(mirror.key)):
        assert "s3cr3t" not in shown and "t0ken" not in shown and "AKIAENV" not in shown
