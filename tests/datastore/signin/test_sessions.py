"""Sessions against DynamoDB Local: rotation, reuse ending the family, races, sign-out, lifetimes."""

from __future__ import annotations

import hashlib
import threading
import time
from datetime import datetime, timedelta

import pytest
from mypy_boto3_dynamodb import DynamoDBClient

from datastore.aws.calls import CallLog
from datastore.errors import ScopeViolation
from datastore.kinds import layout
from datastore.kinds.entities import IdentityProvider, OrganizationStatus, SessionStatus
from datastore.signin import identity_providers, sessions
from datastore.signin.sessions import Lifetimes, RefreshRefused
from datastore.table.scoped import Table
from datastore.tenancy import keys
from datastore.tenancy.scope import SignInScope, TenantScope
from datastore.tenants import employees
from datastore.values import items
from tests.blocking import run
from tests.conftest import Tenant

LIFETIMES = Lifetimes(idle=timedelta(hours=1), absolute=timedelta(days=1))
LEEWAY = timedelta(seconds=30)
WITH_LEEWAY = Lifetimes(idle=timedelta(hours=1), absolute=timedelta(days=1), reuse_leeway=LEEWAY)
KEY = b"k" * 32


def sign_in_table(tenant: Tenant) -> Table:
    return tenant.table.with_scope(SignInScope())


def refresh(
    tenant: Tenant, token: str, lifetimes: Lifetimes = LIFETIMES, now: datetime | None = None
) -> sessions.Rotated:
    grant = run(sessions.find_grant(sign_in_table(tenant), token))
    if grant is None:
        raise RefreshRefused("unknown refresh token")
    return run(sessions.rotate(tenant.table, grant, token, lifetimes, successor_key=KEY, now=now))


def test_start__token_stored_only_as_its_sha256(tenant: Tenant, call_log: CallLog) -> None:
    session, token = run(sessions.start_session(tenant.table, tenant.admin.emp_id, LIFETIMES))
    assert token.startswith("hrr_") and len(token) == 47
    (write,) = [call for call in call_log.snapshot() if call.operation == "TransactWriteItems"]
    assert token not in str(write.params)
    digest = hashlib.sha256(token.encode()).hexdigest()
    assert f"REFRESH#{digest}" in write.partition_keys()
    assert session.status is SessionStatus.ACTIVE and session.generation == 0
    assert session.expires_at == session.created_at + LIFETIMES.idle
    assert sessions.session_started(session.session_id) == items.timestamp(session.created_at)


def test_find_grant__one_consistent_get_item(tenant: Tenant, call_log: CallLog) -> None:
    session, token = run(sessions.start_session(tenant.table, tenant.admin.emp_id, LIFETIMES))
    before = len(call_log.snapshot())
    grant = run(sessions.find_grant(sign_in_table(tenant), token))
    found = call_log.snapshot()[before:]
    assert [call.operation for call in found] == ["GetItem"]
    assert found[0].params["ConsistentRead"] is True
    assert grant is not None
    assert (grant.org_id, grant.emp_id, grant.session_id, grant.generation) == (
        tenant.org_id,
        tenant.admin.emp_id,
        session.session_id,
        0,
    )


def test_find_grant__malformed_or_unknown__none_and_malformed_sends_nothing(tenant: Tenant, call_log: CallLog) -> None:
    table = sign_in_table(tenant)
    assert run(sessions.find_grant(table, "hrk_" + "a" * 43)) is None
    assert run(sessions.find_grant(table, "not a token")) is None
    assert call_log.snapshot() == []
    assert run(sessions.find_grant(table, sessions.new_token())) is None


def test_rotate__new_token_works_old_token_is_reuse_and_ends_the_family(tenant: Tenant) -> None:
    session, first = run(sessions.start_session(tenant.table, tenant.admin.emp_id, LIFETIMES))
    second = refresh(tenant, first).token
    third = refresh(tenant, second).token
    current = run(sessions.get_session(tenant.table, tenant.admin.emp_id, session.session_id))
    assert current is not None and current.generation == 2

    with pytest.raises(RefreshRefused) as reused:
        refresh(tenant, first)
    assert reused.value.reused
    ended = run(sessions.get_session(tenant.table, tenant.admin.emp_id, session.session_id))
    assert ended is not None and ended.status is SessionStatus.ENDED and ended.end_reason == sessions.REUSED
    # The token its legitimate holder got last dies with the family.
    with pytest.raises(RefreshRefused, match="ended"):
        refresh(tenant, third)


def test_rotate__two_concurrent_refreshes_with_one_token__one_wins_the_other_ends_the_family(
    tenant: Tenant,
) -> None:
    session, token = run(sessions.start_session(tenant.table, tenant.admin.emp_id, LIFETIMES))
    grant = run(sessions.find_grant(sign_in_table(tenant), token))
    assert grant is not None
    start = threading.Barrier(2)
    outcomes: list[str] = []

    def attempt() -> None:
        start.wait()
        try:
            run(sessions.rotate(tenant.table, grant, token, LIFETIMES, successor_key=KEY))
            outcomes.append("won")
        except RefreshRefused as refusal:
            outcomes.append("reused" if refusal.reused else str(refusal))

    threads = [threading.Thread(target=attempt) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["reused", "won"]
    ended = run(sessions.get_session(tenant.table, tenant.admin.emp_id, session.session_id))
    assert ended is not None and ended.status is SessionStatus.ENDED and ended.generation == 1


def test_rotate__idle_past_its_deadline__refused(tenant: Tenant) -> None:
    session, token = run(sessions.start_session(tenant.table, tenant.admin.emp_id, LIFETIMES))
    later = session.created_at + LIFETIMES.idle + timedelta(seconds=1)
    with pytest.raises(RefreshRefused, match="idle"):
        refresh(tenant, token, now=later)


def test_rotate__each_refresh_moves_the_idle_deadline_never_past_the_absolute(tenant: Tenant) -> None:
    session, token = run(sessions.start_session(tenant.table, tenant.admin.emp_id, LIFETIMES))
    at = session.created_at
    for _ in range(3):  # 50 minutes apart: within the idle hour each time, past it in total
        at += timedelta(minutes=50)
        token = refresh(tenant, token, now=at).token
    current = run(sessions.get_session(tenant.table, tenant.admin.emp_id, session.session_id))
    assert current is not None
    assert current.expires_at == (at + LIFETIMES.idle).replace(microsecond=0)
    near_end = session.created_at + LIFETIMES.absolute - timedelta(minutes=10)
    for step in (timedelta(minutes=0), timedelta(minutes=50)):
        at = near_end + step
        if step:
            with pytest.raises(RefreshRefused, match="absolute"):
                refresh(tenant, token, now=at)
        else:
            # A long idle gap (past the idle deadline) is refused whatever the absolute says.
            with pytest.raises(RefreshRefused, match="idle"):
                refresh(tenant, token, now=at)


def test_sign_out_everywhere__sessions_begun_before_refused_later_ones_work(tenant: Tenant) -> None:
    emp_id = tenant.admin.emp_id
    _, before_a = run(sessions.start_session(tenant.table, emp_id, LIFETIMES))
    _, before_b = run(sessions.start_session(tenant.table, emp_id, LIFETIMES))
    run(sessions.sign_out_everywhere(tenant.table, emp_id))
    # Times are kept to the millisecond and a session begun in the mark's millisecond counts
    # as begun before it (the refusing side); "later" means a later millisecond.
    time.sleep(0.002)
    _, after = run(sessions.start_session(tenant.table, emp_id, LIFETIMES))
    for token in (before_a, before_b):
        with pytest.raises(RefreshRefused, match="signed out everywhere"):
            refresh(tenant, token)
    refresh(tenant, after)


def test_end_session__its_tokens_refused_others_untouched(tenant: Tenant) -> None:
    emp_id = tenant.admin.emp_id
    ended, ended_token = run(sessions.start_session(tenant.table, emp_id, LIFETIMES))
    _, other_token = run(sessions.start_session(tenant.table, emp_id, LIFETIMES))
    assert run(sessions.end_session(tenant.table, emp_id, ended.session_id, sessions.SIGNED_OUT))
    assert not run(sessions.end_session(tenant.table, emp_id, ended.session_id, sessions.SIGNED_OUT))
    with pytest.raises(RefreshRefused, match="ended"):
        refresh(tenant, ended_token)
    refresh(tenant, other_token)


def test_rotate__terminated_employee__refused_and_session_ended(tenant: Tenant) -> None:
    person = tenant.employee()
    table = tenant.table.with_scope(TenantScope(tenant.organization.org_id, person.emp_id))
    session, token = run(sessions.start_session(table, person.emp_id, LIFETIMES))
    run(employees.terminate_employee(tenant.table, person.emp_id))
    with pytest.raises(RefreshRefused, match=r"employee .* is not active"):
        refresh(tenant, token)
    ended = run(sessions.get_session(tenant.table, person.emp_id, session.session_id))
    assert ended is not None and ended.status is SessionStatus.ENDED


def test_rotate__suspended_organisation__refused(tenant: Tenant, client: DynamoDBClient) -> None:
    _, token = run(sessions.start_session(tenant.table, tenant.admin.emp_id, LIFETIMES))
    # No mutation suspends an organisation: an operator's change to its item.
    client.update_item(
        TableName=tenant.table.name,
        Key=layout.ORGANIZATION.key_at(tenant.org_id).wire(),
        UpdateExpression="SET #status = :suspended",
        ExpressionAttributeNames={"#status": layout.STATUS},
        ExpressionAttributeValues={":suspended": {"S": OrganizationStatus.SUSPENDED.value}},
    )
    with pytest.raises(RefreshRefused, match=r"organisation .* is not active"):
        refresh(tenant, token)


def test_rotate__transaction_of_five_items(tenant: Tenant, call_log: CallLog) -> None:
    _, token = run(sessions.start_session(tenant.table, tenant.admin.emp_id, LIFETIMES))
    grant = run(sessions.find_grant(sign_in_table(tenant), token))
    assert grant is not None
    before = len(call_log.snapshot())
    run(sessions.rotate(tenant.table, grant, token, LIFETIMES, successor_key=KEY))
    (write,) = call_log.snapshot()[before:]
    assert write.operation == "TransactWriteItems"
    kinds = [next(iter(item)) for item in write.params["TransactItems"]]
    assert kinds == ["Update", "Put", "ConditionCheck", "ConditionCheck", "ConditionCheck"]


def test_lookup_items__read_only_by_the_sign_in_scope(tenant: Tenant) -> None:
    _, token = run(sessions.start_session(tenant.table, tenant.admin.emp_id, LIFETIMES))
    with pytest.raises(ScopeViolation):
        run(sessions.find_grant(tenant.table, token))
    assert keys.is_refresh_lookup_pk(layout.REFRESH_LOOKUP.key_at(sessions.token_hash(token)).pk)


# --- the reuse leeway ------------------------------------------------------------------------


def race(tenant: Tenant, token: str, lifetimes: Lifetimes) -> list[sessions.Rotated | RefreshRefused]:
    """Two rotations with ``token`` started at the same moment, each on its own thread."""
    grant = run(sessions.find_grant(sign_in_table(tenant), token))
    assert grant is not None
    start = threading.Barrier(2)
    outcomes: list[sessions.Rotated | RefreshRefused] = []

    def attempt() -> None:
        start.wait()
        try:
            outcomes.append(run(sessions.rotate(tenant.table, grant, token, lifetimes, successor_key=KEY)))
        except RefreshRefused as refusal:
            outcomes.append(refusal)

    threads = [threading.Thread(target=attempt) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes


def test_rotate__two_concurrent_refreshes_within_the_leeway__both_get_the_same_successor(tenant: Tenant) -> None:
    session, token = run(sessions.start_session(tenant.table, tenant.admin.emp_id, WITH_LEEWAY))
    outcomes = race(tenant, token, WITH_LEEWAY)
    assert all(isinstance(outcome, sessions.Rotated) for outcome in outcomes), outcomes
    rotated = [outcome for outcome in outcomes if isinstance(outcome, sessions.Rotated)]
    assert rotated[0].token == rotated[1].token and rotated[0].at == rotated[1].at
    assert sorted(outcome.replayed for outcome in rotated) == [False, True]
    current = run(sessions.get_session(tenant.table, tenant.admin.emp_id, session.session_id))
    assert current is not None and current.status is SessionStatus.ACTIVE and current.generation == 1
    # The successor both got keeps working.
    assert refresh(tenant, rotated[0].token, WITH_LEEWAY).grant.generation == 2


def test_rotate__replay_past_the_leeway__a_reuse_that_ends_the_family(tenant: Tenant) -> None:
    session, token = run(sessions.start_session(tenant.table, tenant.admin.emp_id, WITH_LEEWAY))
    at = session.created_at + timedelta(minutes=1)
    second = refresh(tenant, token, WITH_LEEWAY, now=at)
    # Within the leeway: the same successor again, nothing written.
    again = refresh(tenant, token, WITH_LEEWAY, now=at + LEEWAY - timedelta(seconds=1))
    assert (again.token, again.replayed) == (second.token, True)
    with pytest.raises(RefreshRefused) as reused:
        refresh(tenant, token, WITH_LEEWAY, now=at + LEEWAY + timedelta(seconds=1))
    assert reused.value.reused
    ended = run(sessions.get_session(tenant.table, tenant.admin.emp_id, session.session_id))
    assert ended is not None and ended.status is SessionStatus.ENDED and ended.end_reason == sessions.REUSED
    with pytest.raises(RefreshRefused, match="ended"):
        refresh(tenant, second.token, WITH_LEEWAY, now=at + LEEWAY + timedelta(seconds=2))


def test_rotate__replay_after_its_successor_was_used__a_reuse_even_within_the_leeway(tenant: Tenant) -> None:
    session, first = run(sessions.start_session(tenant.table, tenant.admin.emp_id, WITH_LEEWAY))
    second = refresh(tenant, first, WITH_LEEWAY).token
    third = refresh(tenant, second, WITH_LEEWAY).token
    with pytest.raises(RefreshRefused) as reused:
        refresh(tenant, first, WITH_LEEWAY)
    assert reused.value.reused
    with pytest.raises(RefreshRefused, match="ended"):
        refresh(tenant, third, WITH_LEEWAY)
    ended = run(sessions.get_session(tenant.table, tenant.admin.emp_id, session.session_id))
    assert ended is not None and ended.end_reason == sessions.REUSED


def test_rotate__replay_with_another_key__not_its_successor__a_reuse(tenant: Tenant) -> None:
    """The server key changed between the rotation and the replay: the derived token is not the
    one issued, so the replay is refused as a reuse rather than answered with a dead token."""
    session, token = run(sessions.start_session(tenant.table, tenant.admin.emp_id, WITH_LEEWAY))
    refresh(tenant, token, WITH_LEEWAY)
    grant = run(sessions.find_grant(sign_in_table(tenant), token))
    assert grant is not None
    with pytest.raises(RefreshRefused, match="derived successor"):
        run(sessions.rotate(tenant.table, grant, token, WITH_LEEWAY, successor_key=b"x" * 32))
    ended = run(sessions.get_session(tenant.table, tenant.admin.emp_id, session.session_id))
    assert ended is not None and ended.status is SessionStatus.ENDED


def test_successor__a_token_only_the_key_derives__stored_hashed(tenant: Tenant, call_log: CallLog) -> None:
    _, token = run(sessions.start_session(tenant.table, tenant.admin.emp_id, WITH_LEEWAY))
    before = len(call_log.snapshot())
    rotated = refresh(tenant, token, WITH_LEEWAY)
    assert rotated.token == sessions.successor(token, KEY) != sessions.successor(token, b"x" * 32)
    assert sessions.token_hash(rotated.token)  # a well-formed refresh token
    written = [call for call in call_log.snapshot()[before:] if call.operation == "TransactWriteItems"]
    assert written and all(rotated.token not in str(call.params) for call in written)


# --- sessions begun through the organisation's own provider ------------------------------------


def own_provider(tenant: Tenant) -> IdentityProvider:
    provider, _ = run(
        identity_providers.set_identity_provider(
            tenant.table,
            tenant.organization.org_id,
            issuer_url=f"https://idp.{tenant.domain}",
            client_id_list=["web"],
            authorization_endpoint=f"https://idp.{tenant.domain}/authorize",
            token_endpoint=f"https://idp.{tenant.domain}/token",
        )
    )
    return provider


def test_rotate__provider_removed__refused_and_the_session_ended(tenant: Tenant, call_log: CallLog) -> None:
    provider = own_provider(tenant)
    through, token = run(sessions.start_session(tenant.table, tenant.admin.emp_id, LIFETIMES, provider=provider))
    _, platform_token = run(sessions.start_session(tenant.table, tenant.admin.emp_id, LIFETIMES))
    before = len(call_log.snapshot())
    token = refresh(tenant, token).token
    (write,) = [call for call in call_log.snapshot()[before:] if call.operation == "TransactWriteItems"]
    assert len(write.params["TransactItems"]) == 6  # the provider's record checked too
    run(identity_providers.remove_identity_provider(tenant.table, tenant.organization.org_id))
    with pytest.raises(RefreshRefused, match=r"identity provider .* was removed"):
        refresh(tenant, token)
    ended = run(sessions.get_session(tenant.table, tenant.admin.emp_id, through.session_id))
    assert ended is not None and ended.status is SessionStatus.ENDED and ended.end_reason == sessions.PROVIDER_GONE
    refresh(tenant, platform_token)  # a session begun through the platform's provider goes on


def test_rotate__provider_registered_again_with_the_same_issuer__earlier_sessions_stay_ended(
    tenant: Tenant,
) -> None:
    provider = own_provider(tenant)
    _, token = run(sessions.start_session(tenant.table, tenant.admin.emp_id, LIFETIMES, provider=provider))
    run(identity_providers.remove_identity_provider(tenant.table, tenant.organization.org_id))
    time.sleep(0.002)  # a later millisecond: another registration
    own_provider(tenant)
    with pytest.raises(RefreshRefused, match="identity provider"):
        refresh(tenant, token)


def test_rotate__lookup_item_written_the_old_way__rotates_without_a_provider_check(
    tenant: Tenant, call_log: CallLog
) -> None:
    """A lookup item from before providers were recorded (no providerIssuer/providerSince)."""
    own_provider(tenant)
    _, token = run(sessions.start_session(tenant.table, tenant.admin.emp_id, LIFETIMES))
    key = layout.REFRESH_LOOKUP.key_at(sessions.token_hash(token))
    stored = run(sign_in_table(tenant).get(key, consistent=True))
    assert stored is not None and "providerIssuer" not in stored and "providerSince" not in stored
    before = len(call_log.snapshot())
    rotated = refresh(tenant, token)
    (write,) = [call for call in call_log.snapshot()[before:] if call.operation == "TransactWriteItems"]
    assert len(write.params["TransactItems"]) == 5
    assert rotated.grant.provider_issuer is None
