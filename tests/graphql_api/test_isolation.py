"""Tenant isolation, attacked from every side the API offers.

For each role (employee, manager, admin of organisation A, an EMPLOYEE and an ADMIN API key
of A, and a platform operator), every
root field, every connection and every id-taking argument is given organisation B's ids,
global ids forged from B's raw ids under every type name, ids of the wrong type, B's emails
and cursors taken from B's lists. Each attempt must:

- answer exactly as the same request does with an id (or cursor, or email) that names
  nothing (same data, same error codes, messages and paths);
- contain none of B's ids, emails or names;
- send DynamoDB only keys of A's partitions (or, for the operator, the ORGS list; for an API
  key, its own lookup item too).

B's API key ids are tried in revokeApiKey, and B's keys listed through A (Organization.apiKeys).

The number of attempts is printed (``-s``) and asserted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from datastore.aws import calls
from datastore.kinds import layout
from datastore.kinds.entities import Role
from datastore.signin import api_keys
from datastore.tenancy import keys
from datastore.values.ids import new_id
from graphql_api.execution import ids
from tests.blocking import run
from tests.conftest import TenantFactory
from tests.graphql_api.fixtures import Api, GraphQLClient
from tests.graphql_api.security_world import World, build_world

ROOT_QUERIES: dict[str, str] = {
    "node": "query($id: ID!) { node(id: $id) { id __typename } }",
    "employee": "query($id: ID!) { employee(id: $id) { id email department { id } "
    "applications { edges { cursor node { id } } } } }",
    "department": "query($id: ID!) { department(id: $id) { id name manager { id } "
    "employees { edges { cursor node { id } } } } }",
    "jobPosting": "query($id: ID!) { jobPosting(id: $id) { id title department { id } "
    "applications { edges { cursor node { id } } } } }",
    "application": "query($id: ID!) { application(id: $id) { id status employee { id } jobPosting { id } } }",
}
TYPED_FIELDS = ["employee", "department", "jobPosting", "application"]
EMAIL_QUERY = "query($email: String!) { employeeByEmail(email: $email) { id email } }"
NO_ID_ROOTS = [
    "{ me { id email } }",
    "{ organization { id name subscription { id plan } } }",
    "{ organizations(first: 100) { edges { node { id name } } } }",
]

PAGE = "(first: 1, after: $after{extra}) {{ edges {{ cursor node {{ id }} }} }}"


def org_connection(name: str, extra: str = "") -> str:
    return "query($after: String) { organization { " + name + PAGE.format(extra=extra) + " } }"


def child_connection(root: str, name: str) -> str:
    return "query($id: ID!, $after: String) { " + root + "(id: $id) { " + name + PAGE.format(extra="") + " } }"


CONNECTIONS: dict[str, str] = {
    "Organization.departments": org_connection("departments"),
    "Organization.employees": org_connection("employees"),
    "Organization.employees:DESC": org_connection("employees", ", order: DESC"),
    "Organization.jobPostings:ALL": org_connection("jobPostings"),
    "Organization.jobPostings:OPEN": org_connection("jobPostings", ", status: OPEN"),
    "Organization.apiKeys": org_connection("apiKeys"),
    "Department.employees": child_connection("department", "employees"),
    "JobPosting.applications": child_connection("jobPosting", "applications"),
    "Employee.applications": child_connection("employee", "applications"),
    "Query.organizations": "query($after: String) { organizations" + PAGE.format(extra="") + " }",
}
NOWHERE_CURSOR = "eyJ0Ijoibm93aGVyZSJ9.AAAAAAAAAAAAAAAAAAAAAA"


def parent_ids(world: World, caller_emp_id: str | None) -> dict[str, str]:
    """The parent each child connection is read under, in ``world``."""
    return {
        "Department.employees": ids.encode("Department", world.d1.dept_id),
        "JobPosting.applications": ids.encode("JobPosting", world.j1.job_id),
        "Employee.applications": ids.encode("Employee", caller_emp_id or world.other.emp_id),
    }


def shape(body: dict[str, Any]) -> tuple[str, list[tuple[str | None, str, Any]]]:
    errors = [
        (e.get("extensions", {}).get("code"), e.get("message", ""), e.get("path")) for e in body.get("errors", [])
    ]
    body_data = {k: v for k, v in body.items() if k != "extensions"}.get("data")
    return json.dumps(body_data, sort_keys=True), errors


@dataclass
class Attacker:
    client: GraphQLClient
    own_org: str | None
    victim_markers: list[str]
    # Partitions outside A it may address: an API key's own lookup item.
    also_allowed: frozenset[str] = frozenset()
    attempts: int = 0
    failures: list[str] = field(default_factory=list)
    _baselines: dict[tuple[str, str], Any] = field(default_factory=dict)

    def send(self, query: str, variables: dict[str, Any]) -> dict[str, Any]:
        with calls.listening() as log:
            body = self.client.query(query, variables)
        for pk in (pk for call in log.snapshot() for pk in call.partition_keys()):
            inside = pk == keys.ORGS_PK if self.own_org is None else keys.in_tenant(pk, self.own_org)
            if not inside and pk not in self.also_allowed:
                self.failures.append(f"{query[:60]} {variables}: sent key {pk!r}")
        return body

    def attempt(self, label: str, query: str, variables: dict[str, Any], baseline: dict[str, Any]) -> None:
        self.attempts += 1
        body = self.send(query, variables)
        text = json.dumps(body)
        leaked = [m for m in self.victim_markers if m in text]
        if leaked:
            self.failures.append(f"{label}: response holds the other tenant's {leaked}")
        key = (query, json.dumps(baseline, sort_keys=True))
        if key not in self._baselines:
            self._baselines[key] = shape(self.send(query, baseline))
        if shape(body) != self._baselines[key]:
            self.failures.append(f"{label}: {shape(body)} differs from nonexistent {self._baselines[key]}")


def nonexistent_id(type_name: str) -> str:
    if type_name == "Application":
        return ids.encode("Application", new_id(), new_id())
    return ids.encode(type_name, new_id())


def victim_raw_ids(victim: World) -> list[str]:
    return [
        victim.tenant.org_id,
        victim.d1.dept_id,
        victim.d2.dept_id,
        victim.admin.emp_id,
        victim.manager.emp_id,
        victim.employee.emp_id,
        victim.other.emp_id,
        victim.j1.job_id,
        victim.j2.job_id,
        victim.j3.job_id,
        victim.a_e_j1.app_id,
        victim.a_f_j1.app_id,
        victim.a_f_j2.app_id,
    ]


def victim_ids(victim: World) -> list[tuple[str, str]]:
    """(type the id claims, global id): the real ids of every object, then forged ones."""
    real = [
        *victim.global_ids().items(),
        ("Department", ids.encode("Department", victim.d2.dept_id)),
        ("Employee", ids.encode("Employee", victim.admin.emp_id)),
        ("Employee", ids.encode("Employee", victim.manager.emp_id)),
        ("JobPosting", ids.encode("JobPosting", victim.j3.job_id)),
        ("Application", ids.encode("Application", victim.a_f_j2.job_id, victim.a_f_j2.app_id)),
    ]
    raw = victim_raw_ids(victim)
    forged = [
        (t, ids.encode(t, r))
        for r in raw
        for t in ("Organization", "Subscription", "Department", "Employee", "JobPosting")
    ]
    forged += [("Application", ids.encode("Application", a, b)) for a in raw[7:10] for b in [*raw[3:7], *raw[10:]]]
    seen: set[str] = set()
    return [(t, g) for t, g in real + forged if not (g in seen or seen.add(g))]


def victim_cursors(api: Api, victim: World) -> dict[str, list[str]]:
    """Cursors of every list of B, read by B's own admin (and the operator's list)."""
    found: dict[str, list[str]] = {}
    parents = parent_ids(victim, None)
    for name, query in CONNECTIONS.items():
        client = api.platform if name == "Query.organizations" else api.as_(victim.admin)
        variables: dict[str, Any] = {"after": None}
        if name in parents:
            variables["id"] = parents[name]
        body = client.data(query, variables)
        connection = _connection(body)
        found[name] = [edge["cursor"] for edge in connection["edges"]]
        assert found[name], f"{name}: the victim's list is empty"
    return found


def _connection(data: dict[str, Any]) -> dict[str, Any]:
    node: Any = data
    while "edges" not in node:
        node = next(iter(node.values()))
    result: dict[str, Any] = node
    return result


ROLES = ["employee", "manager", "admin", "employee key", "admin key", "platform"]
REVOKE = "mutation($input: RevokeApiKeyInput!) { revokeApiKey(input: $input) { apiKey { id name } } }"


@pytest.mark.parametrize("role", ROLES)
def test_isolation__other_tenants_ids_and_cursors__resolve_like_nothing(
    api: Api, make_tenant: TenantFactory, role: str
) -> None:
    ours, theirs = build_world(make_tenant("Ours")), build_world(make_tenant("Theirs"))
    markers = [*victim_raw_ids(theirs), theirs.tenant.organization.name]
    markers += [e.email for e in (theirs.admin, theirs.manager, theirs.employee, theirs.other)]
    their_key, _their_secret = run(api_keys.create_api_key(theirs.tenant.table, name="Their sync", role=Role.ADMIN))
    markers += [their_key.key_id, their_key.name]
    run(api_keys.create_api_key(ours.tenant.table, name="Our sync", role=Role.ADMIN))
    if role.endswith(" key"):
        key_role = Role.ADMIN if role == "admin key" else Role.EMPLOYEE
        _key, secret = run(api_keys.create_api_key(ours.tenant.table, name=role, role=key_role))
        lookup = layout.API_KEY_LOOKUP.partition(_key.secret_hash)
        attacker = Attacker(
            api.as_(ours.admin).with_token(secret),
            ours.tenant.org_id,
            [*markers, theirs.tenant.domain],
            also_allowed=frozenset({lookup}),
        )
        caller_emp_id = None
        markers_note = ""
    elif role == "platform":
        attacker = Attacker(api.platform, None, [m for m in markers if m != theirs.tenant.org_id])
        caller_emp_id = None
        markers_note = "(the operator may list every organisation)"
    else:
        caller = getattr(ours, role)
        attacker = Attacker(api.as_(caller), ours.tenant.org_id, [*markers, theirs.tenant.domain])
        caller_emp_id = caller.emp_id
        markers_note = ""

    # 1. Root fields taking an id: B's real and forged ids, and ids of every wrong type.
    for claimed, global_id in victim_ids(theirs):
        attacker.attempt(f"node({claimed})", ROOT_QUERIES["node"], {"id": global_id}, {"id": nonexistent_id(claimed)})
        for field_name in TYPED_FIELDS:
            baseline = nonexistent_id(claimed)
            attacker.attempt(
                f"{field_name}({claimed} id)", ROOT_QUERIES[field_name], {"id": global_id}, {"id": baseline}
            )
    # 2. Root fields by email: B's people.
    for person in (theirs.admin, theirs.manager, theirs.employee, theirs.other):
        attacker.attempt(
            "employeeByEmail",
            EMAIL_QUERY,
            {"email": person.email},
            {"email": f"nobody-{new_id().lower()}@{theirs.tenant.domain}"},
        )
    # 3. Root fields without arguments: answer with A's data (or nothing) only.
    for query in NO_ID_ROOTS:
        if role == "platform" and "organizations" in query:
            continue  # the operator's list names every organisation by design
        attacker.attempt(query[:20], query, {}, {})
    # 4. Every connection given each of B's cursors, from the same list and from every other.
    cursors = victim_cursors(api, theirs)
    our_parents = parent_ids(ours, caller_emp_id)
    for name, query in CONNECTIONS.items():
        for source, taken in cursors.items():
            if role == "platform" and source == name == "Query.organizations":
                continue  # the operator's own list: no tenant's cursor
            for cursor in taken:
                variables: dict[str, Any] = {"after": cursor}
                baseline: dict[str, Any] = {"after": NOWHERE_CURSOR}
                if name in our_parents:
                    variables["id"] = baseline["id"] = our_parents[name]
                attacker.attempt(f"{name}(after: cursor of B's {source})", query, variables, baseline)
    # 5. B's parents under A's child connections.
    for name in ("Department.employees", "JobPosting.applications", "Employee.applications"):
        their_parent = parent_ids(theirs, None)[name]
        type_name = name.split(".")[0]
        attacker.attempt(
            f"{name} under B's parent",
            CONNECTIONS[name],
            {"id": their_parent, "after": None},
            {"id": nonexistent_id(type_name), "after": None},
        )

    # 6. B's API key ids (real, and forged under other type names) in revokeApiKey.
    for global_id in (ids.encode("ApiKey", their_key.key_id), ids.encode("Employee", their_key.key_id)):
        attacker.attempt(
            "revokeApiKey(B's key)", REVOKE, {"input": {"id": global_id}}, {"input": {"id": nonexistent_id("ApiKey")}}
        )

    print(f"\nisolation[{role}]: {attacker.attempts} cross-tenant attempts {markers_note}")
    assert not attacker.failures, "\n".join(attacker.failures[:40])
    assert attacker.attempts >= 300
