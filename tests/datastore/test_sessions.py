"""Sessions against DynamoDB Local: rotation, reuse ending the family, races, sign-out, lifetimes."""

from __future__ import annotations

import hashlib
import threading
import time
from datetime import timedelta

import pytest

from datastore import employees, items, keys, layout, sessions
from datastore.calls import CallLog
from datastore.entities import OrganizationStatus, SessionStatus
from datastore.errors import ScopeViolation
from datastore.scope import SignInScope, TenantScope
from datastore.sessions import Lifetimes, RefreshRefused
from datastore.table import Table
from tests.conftest import Tenant

LIFETIMES = Lifetimes(idle=timedelta(hours=1), absolute=timedelta(days=1))


def sign_in_table(tenant: Tenant) -> Table:
    return tenant.table.with_scope(SignInScope())


def refresh(tenant: Tenant, token: str, **kwargs: object) -> tuple[object, str]:
    grant = sessions.find_grant(sign_in_table(tenant), token)
    if grant is None:
        raise RefreshRefused("unknown refresh token")
    return sessions.rotate(tenant.table, grant, LIFETIMES, **kwargs)  # type: ignore[arg-type]


def test_start__token_stored_only_as_its_sha256(tenant: Tenant, call_log: CallLog) -> None:
    session, token = sessions.start_session(tenant.table, tenant.admin.emp_id, LIFETIMES)
    assert token.startswith("hrr_") and len(token) == 47
    (write,) = [call for call in call_log.snapshot() if call.operation == "TransactWriteItems"]
    assert token not in str(write.params)
    digest = hashlib.sha256(token.encode()).hexdigest()
    assert f"REFRESH#{digest}" in write.partition_keys()
    assert session.status is SessionStatus.ACTIVE and session.generation == 0
    assert session.expires_at == session.created_at + LIFETIMES.idle
    assert sessions.session_started(session.session_id) == items.timestamp(session.created_at)


def test_find_grant__one_consistent_get_item(tenant: Tenant, call_log: CallLog) -> None:
    session, token = sessions.start_session(tenant.table, tenant.admin.emp_id, LIFETIMES)
    before = len(call_log.snapshot())
    grant = sessions.find_grant(sign_in_table(tenant), token)
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
    assert sessions.find_grant(table, "hrk_" + "a" * 43) is None
    assert sessions.find_grant(table, "not a token") is None
    assert call_log.snapshot() == []
    assert sessions.find_grant(table, sessions.new_token()) is None


def test_rotate__new_token_works_old_token_is_reuse_and_ends_the_family(tenant: Tenant) -> None:
    session, first = sessions.start_session(tenant.table, tenant.admin.emp_id, LIFETIMES)
    _, second = refresh(tenant, first)
    _, third = refresh(tenant, second)
    current = sessions.get_session(tenant.table, tenant.admin.emp_id, session.session_id)
    assert current is not None and current.generation == 2

    with pytest.raises(RefreshRefused) as reused:
        refresh(tenant, first)
    assert reused.value.reused
    ended = sessions.get_session(tenant.table, tenant.admin.emp_id, session.session_id)
    assert ended is not None and ended.status is SessionStatus.ENDED and ended.end_reason == sessions.REUSED
    # The token its legitimate holder got last dies with the family.
    with pytest.raises(RefreshRefused, match="ended"):
        refresh(tenant, third)


def test_rotate__two_concurrent_refreshes_with_one_token__one_wins_the_other_ends_the_family(
    tenant: Tenant,
) -> None:
    session, token = sessions.start_session(tenant.table, tenant.admin.emp_id, LIFETIMES)
    grant = sessions.find_grant(sign_in_table(tenant), token)
    assert grant is not None
    start = threading.Barrier(2)
    outcomes: list[str] = []

    def attempt() -> None:
        start.wait()
        try:
            sessions.rotate(tenant.table, grant, LIFETIMES)
            outcomes.append("won")
        except RefreshRefused as refusal:
            outcomes.append("reused" if refusal.reused else str(refusal))

    threads = [threading.Thread(target=attempt) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["reused", "won"]
    ended = sessions.get_session(tenant.table, tenant.admin.emp_id, session.session_id)
    assert ended is not None and ended.status is SessionStatus.ENDED and ended.generation == 1


def test_rotate__idle_past_its_deadline__refused(tenant: Tenant) -> None:
    session, token = sessions.start_session(tenant.table, tenant.admin.emp_id, LIFETIMES)
    later = session.created_at + LIFETIMES.idle + timedelta(seconds=1)
    with pytest.raises(RefreshRefused, match="idle"):
        refresh(tenant, token, now=later)


def test_rotate__each_refresh_moves_the_idle_deadline_never_past_the_absolute(tenant: Tenant) -> None:
    session, token = sessions.start_session(tenant.table, tenant.admin.emp_id, LIFETIMES)
    at = session.created_at
    for _ in range(3):  # 50 minutes apart: within the idle hour each time, past it in total
        at += timedelta(minutes=50)
        _, token = refresh(tenant, token, now=at)
    current = sessions.get_session(tenant.table, tenant.admin.emp_id, session.session_id)
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
    _, before_a = sessions.start_session(tenant.table, emp_id, LIFETIMES)
    _, before_b = sessions.start_session(tenant.table, emp_id, LIFETIMES)
    sessions.sign_out_everywhere(tenant.table, emp_id)
    # Times are kept to the millisecond and a session begun in the mark's millisecond counts
    # as begun before it (the refusing side); "later" means a later millisecond.
    time.sleep(0.002)
    _, after = sessions.start_session(tenant.table, emp_id, LIFETIMES)
    for token in (before_a, before_b):
        with pytest.raises(RefreshRefused, match="signed out everywhere"):
            refresh(tenant, token)
    refresh(tenant, after)


def test_end_session__its_tokens_refused_others_untouched(tenant: Tenant) -> None:
    emp_id = tenant.admin.emp_id
    ended, ended_token = sessions.start_session(tenant.table, emp_id, LIFETIMES)
    _, other_token = sessions.start_session(tenant.table, emp_id, LIFETIMES)
    assert sessions.end_session(tenant.table, emp_id, ended.session_id, sessions.SIGNED_OUT)
    assert not sessions.end_session(tenant.table, emp_id, ended.session_id, sessions.SIGNED_OUT)
    with pytest.raises(RefreshRefused, match="ended"):
        refresh(tenant, ended_token)
    refresh(tenant, other_token)


def test_rotate__terminated_employee__refused_and_session_ended(tenant: Tenant) -> None:
    person = tenant.employee()
    table = tenant.table.with_scope(TenantScope(tenant.organization.org_id, person.emp_id))
    session, token = sessions.start_session(table, person.emp_id, LIFETIMES)
    employees.terminate_employee(tenant.table, person.emp_id)
    with pytest.raises(RefreshRefused, match=r"employee .* is not active"):
        refresh(tenant, token)
    ended = sessions.get_session(tenant.table, person.emp_id, session.session_id)
    assert ended is not None and ended.status is SessionStatus.ENDED


def test_rotate__suspended_organisation__refused(tenant: Tenant) -> None:
    _, token = sessions.start_session(tenant.table, tenant.admin.emp_id, LIFETIMES)
    # No mutation suspends an organisation: an operator's change to its item.
    tenant.table.client.update_item(
        TableName=tenant.table.name,
        Key=layout.ORGANIZATION.key_at(tenant.org_id).wire(),
        UpdateExpression="SET #status = :suspended",
        ExpressionAttributeNames={"#status": layout.STATUS},
        ExpressionAttributeValues={":suspended": {"S": OrganizationStatus.SUSPENDED.value}},
    )
    with pytest.raises(RefreshRefused, match=r"organisation .* is not active"):
        refresh(tenant, token)


def test_rotate__transaction_of_five_items(tenant: Tenant, call_log: CallLog) -> None:
    _, token = sessions.start_session(tenant.table, tenant.admin.emp_id, LIFETIMES)
    grant = sessions.find_grant(sign_in_table(tenant), token)
    assert grant is not None
    before = len(call_log.snapshot())
    sessions.rotate(tenant.table, grant, LIFETIMES)
    (write,) = call_log.snapshot()[before:]
    assert write.operation == "TransactWriteItems"
    kinds = [next(iter(item)) for item in write.params["TransactItems"]]
    assert kinds == ["Update", "Put", "ConditionCheck", "ConditionCheck", "ConditionCheck"]


def test_lookup_items__read_only_by_the_sign_in_scope(tenant: Tenant) -> None:
    _, token = sessions.start_session(tenant.table, tenant.admin.emp_id, LIFETIMES)
    with pytest.raises(ScopeViolation):
        sessions.find_grant(tenant.table, token)
    assert keys.is_refresh_lookup_pk(layout.REFRESH_LOOKUP.key_at(sessions.token_hash(token)).pk)
