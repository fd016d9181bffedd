"""``organization.employees(search:, orderBy: NAME)`` over 2,000 employees, checked by brute force.

The directory is seeded once for the module with BatchWriteItem (datastore/dev/seed.py,
the datastore's own item codec): duplicate full names, non-ASCII names, names whose first and
last name share a prefix ("Ali Alison"), and some terminated employees. Every prefix of a
sample of names, typed as written and in upper case, is searched page by page with small
pages, in both orders, and compared with the answer computed here in Python; each page must
be exactly one DynamoDB Query.
"""

from __future__ import annotations

import random
import unicodedata
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import pytest

from datastore.aws.calls import CallLog
from datastore.aws.client import AsyncDynamo
from datastore.dev.seed import Bulk
from datastore.kinds.entities import Employee, EmployeeStatus, Plan, Role
from datastore.table.scoped import Table
from datastore.tenancy.scope import PlatformScope
from datastore.tenants import employees, organizations
from graphql_api.execution import ids
from tests.blocking import run
from tests.conftest import TenantFactory, unique_domain
from tests.graphql_api.fixtures import Api, GraphQLClient

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

SIZE = 2_000
SAMPLED = 30

FIRST_NAMES = [
    "Ali", "Alice", "Ålice", "ALICE", "Alicia", "Anna", "Anne", "Ánh", "Bob", "Björn", "Chloé", "Çağla",
    "Dmitri", "Élodie", "Emma", "Eve", "François", "Gaëlle", "Hank", "Ingrid", "José", "Jürgen",
    "Łukasz", "Maël", "Mary Ann", "Noël", "Øyvind", "Paul", "Renée", "Søren", "Zoë", "Ægir",
    "Straße", "ﬁona", "Ωmega", "李", "Jo", "J",
]  # fmt: skip
LAST_NAMES = [
    "Alison", "Alisson", "Anderson", "Ångström", "Berg", "Brontë", "Çelik", "Dupont", "Dvořák",
    "Éclair", "García", "Gómez", "Hansen", "Jones", "Jonés", "Kowalski", "Lee", "Müller",
    "Nuñez", "Ng", "Ng Li", "O'Brien", "Øster", "Peña", "Quinn", "Schröder", "Smith", "Straße",
    "van der Berg", "Wójcik", "Zoë", "Ærø", "王",
]  # fmt: skip

SEARCH = """
query($search: String, $orderBy: EmployeeOrder, $order: SortOrder!, $first: Int!, $after: String) {
  organization {
    employees(search: $search, orderBy: $orderBy, order: $order, first: $first, after: $after) {
      edges { cursor node { id firstName lastName status } }
      pageInfo { hasNextPage endCursor }
    }
  }
}"""


def fold(text: str) -> str:
    """The comparison the issue asks for, written out here independently of datastore/values/names.py."""
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c)).casefold()


@dataclass(frozen=True)
class Directory:
    admin: Employee
    employees: list[Employee]

    def by_name(self, found: list[Employee]) -> list[str]:
        ordered = sorted(found, key=lambda e: (fold(e.last_name).strip(), fold(e.first_name).strip(), e.emp_id))
        return [ids.encode("Employee", e.emp_id) for e in ordered]

    def matching(self, search: str) -> list[str]:
        prefix = fold(search).strip()
        return self.by_name(
            [e for e in self.employees if fold(e.first_name).startswith(prefix) or fold(e.last_name).startswith(prefix)]
        )


@pytest.fixture(scope="module")
def directory(client: DynamoDBClient, dynamo: AsyncDynamo, table_name: str) -> Directory:
    org, admin = run(
        organizations.create_organization(
            Table(dynamo, table_name, PlatformScope()),
            name="Search",
            plan=Plan.ENTERPRISE,
            email_domains=[domain := unique_domain()],
            admin_email=f"admin@{domain}",
            admin_first_name="Ada",
            admin_last_name="Admin",
        )
    )
    rng = random.Random(13)
    bulk = Bulk(org.org_id)
    department = bulk.department("Everyone")
    named = [("Ali", "Alison"), ("Ali", "Alison"), ("Alison", "Ali"), ("Ng", "Ng"), ("Jo", "Jones")]
    for n in range(SIZE - 1):  # the admin is the 2,000th
        first, last = named[n] if n < len(named) else (rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES))
        bulk.employee(department, n, first_name=first, last_name=last, terminated=n % 97 == 0)
    active = sum(1 for e in bulk.employees if e.status is EmployeeStatus.ACTIVE)
    bulk.departments = [replace(department, headcount=active)]
    run(bulk.write(Table(dynamo, table_name, PlatformScope())))
    return Directory(admin, [admin, *bulk.employees])


def walk(
    caller: GraphQLClient, variables: dict[str, Any], first: int, log: CallLog | None = None
) -> list[dict[str, Any]]:
    """Every node of a listing, ``first`` at a time; with ``log``, each page is one name Query."""
    nodes: list[dict[str, Any]] = []
    after = None
    while True:
        before = 0 if log is None else len(log.snapshot())
        body = caller.query(SEARCH, {**variables, "first": first, "after": after})
        assert "errors" not in body, body
        if log is not None:
            # The request's other calls are the caller checks (organisation, employee).
            names = [c for c in log.snapshot()[before:] if any("#NAME#" in pk for pk in c.partition_keys())]
            assert [c.operation for c in names] == ["Query"], variables
        connection = body["data"]["organization"]["employees"]
        edges = connection["edges"]
        assert edges or after is None, "a page after a page that said more follow is empty"
        nodes += [edge["node"] for edge in edges]
        if not connection["pageInfo"]["hasNextPage"]:
            return nodes
        # Exact pages: a page that says more follow is full, and its end cursor is its last edge's.
        assert len(edges) == first
        after = connection["pageInfo"]["endCursor"]
        assert after == edges[-1]["cursor"]


def sampled_names(directory: Directory) -> list[str]:
    rng = random.Random(7)
    people = rng.sample(directory.employees, SAMPLED)
    return sorted({name for e in people for name in (e.first_name, e.last_name)} | {"Ali", "Alison"})


def test_search__every_prefix_of_sampled_names__equals_brute_force_both_orders(
    api: Api, directory: Directory, call_log: CallLog
) -> None:
    caller = api.as_(directory.admin)
    searches = sorted({name[:length] for name in sampled_names(directory) for length in range(1, len(name) + 1)})
    searches = [s for s in searches if s.strip()]
    assert len(searches) > 100
    for index, search in enumerate(searches):
        typed = search.upper() if index % 2 else search  # case is ignored
        expected = directory.matching(typed)
        assert expected, search  # every prefix of a real name finds someone
        first = min(100, max(1, -(-len(expected) // 3)))  # three or four pages (more for the largest)
        ascending = walk(caller, {"search": typed, "order": "ASC"}, first, call_log)
        assert [node["id"] for node in ascending] == expected, search
        descending = walk(caller, {"search": typed, "order": "DESC"}, first)
        assert [node["id"] for node in descending] == expected[::-1], search


def test_search__first_and_last_name_share_the_prefix__listed_once(api: Api, directory: Directory) -> None:
    caller = api.as_(directory.admin)
    for search in ("a", "al", "ali", "ALI", "Åli", "alis", "alison"):
        found = [node["id"] for node in walk(caller, {"search": search, "order": "ASC"}, 7)]
        assert len(found) == len(set(found)), search
        assert found == directory.matching(search), search
    ali_alisons = [e for e in directory.employees if (e.first_name, e.last_name) == ("Ali", "Alison")]
    assert len(ali_alisons) >= 2  # duplicate full names: each listed once, by id
    once = walk(caller, {"search": "ali", "order": "ASC"}, 100)
    listed = [node["id"] for node in once if (node["firstName"], node["lastName"]) == ("Ali", "Alison")]
    assert listed == directory.by_name(ali_alisons)


def test_search__accents_and_case__match_alike(api: Api, directory: Directory) -> None:
    caller = api.as_(directory.admin)
    answers = [
        [node["id"] for node in walk(caller, {"search": search, "order": "ASC"}, 100)]
        for search in ("alice", "ALICE", "Ålice", "ÅLİCE")
    ]
    assert answers[0] == answers[1] == answers[2]
    assert answers[0] == directory.matching("alice")
    named = {node["firstName"] for node in walk(caller, {"search": "alice", "order": "ASC"}, 100)}
    assert {"Alice", "Ålice", "ALICE", "Alicia"} >= named >= {"Alice", "Ålice", "ALICE"}


def test_search__terminated_employees__listed_with_status_inactive(api: Api, directory: Directory) -> None:
    caller = api.as_(directory.admin)
    nodes = walk(caller, {"search": "a", "order": "ASC"}, 100)
    assert {node["status"] for node in nodes} == {"ACTIVE", "INACTIVE"}


def test_order_by_name__whole_directory__equals_sorted_brute_force(
    api: Api, directory: Directory, call_log: CallLog
) -> None:
    caller = api.as_(directory.admin)
    ascending = walk(caller, {"orderBy": "NAME", "order": "ASC"}, 100, call_log)
    assert len(ascending) == SIZE
    assert [node["id"] for node in ascending] == directory.by_name(directory.employees)
    descending = walk(caller, {"orderBy": "NAME", "order": "DESC"}, 100)
    assert [node["id"] for node in descending] == directory.by_name(directory.employees)[::-1]


def test_order_by_hired_at__is_the_default(api: Api, directory: Directory) -> None:
    caller = api.as_(directory.admin)
    default = walk(caller, {"order": "ASC"}, 100)
    explicit = walk(caller, {"orderBy": "HIRED_AT", "order": "ASC"}, 100)
    assert [n["id"] for n in default] == [n["id"] for n in explicit]
    ordered = sorted(directory.employees, key=lambda e: (e.hired_at, e.emp_id))
    assert [n["id"] for n in default] == [ids.encode("Employee", e.emp_id) for e in ordered]


def test_search__cursor_of_another_search__rejected(api: Api, directory: Directory) -> None:
    caller = api.as_(directory.admin)
    page = caller.data(SEARCH, {"search": "al", "order": "ASC", "first": 2})["organization"]["employees"]
    cursor = page["pageInfo"]["endCursor"]
    for other in (
        {"search": "an", "order": "ASC"},
        {"search": "al", "order": "DESC"},
        {"orderBy": "NAME", "order": "ASC"},
        {"order": "ASC"},
    ):
        body = caller.query(SEARCH, {**other, "first": 2, "after": cursor})
        assert body["errors"][0]["extensions"] == {"code": "BAD_USER_INPUT", "field": "after"}, other


@pytest.mark.parametrize(
    ("search", "reason"),
    [
        ("", "must not be blank"),
        ("   ", "must not be blank"),
        ("\u0301", "must not be blank"),  # a lone combining mark folds to nothing
        ("a" * 17, "must be at most 16 characters"),
        ("\ufb03" * 6, "must be at most 16 characters once case and accents are folded"),  # ffi x 6 = 18
        ("al\x07", "must not contain control or formatting characters (U+0007)"),
        ("al\u202e", "must not contain control or formatting characters (U+202E)"),
    ],
)
def test_search__bad_text__bad_user_input_on_search(api: Api, directory: Directory, search: str, reason: str) -> None:
    body = api.as_(directory.admin).query(SEARCH, {"search": search, "order": "ASC", "first": 5})
    [error] = body["errors"]
    assert error["extensions"] == {"code": "BAD_USER_INPUT", "field": "search"}
    assert error["message"].endswith(reason)
    assert body["extensions"]["cost"]["requests"].get("Query", 0) == 0


def test_search__sixteen_characters__accepted(api: Api, directory: Directory) -> None:
    body = api.as_(directory.admin).query(SEARCH, {"search": "a" * 16, "order": "ASC", "first": 5})
    assert body["data"]["organization"]["employees"]["edges"] == []


def test_search__with_order_by_hired_at__bad_user_input(api: Api, directory: Directory) -> None:
    body = api.as_(directory.admin).query(SEARCH, {"search": "al", "orderBy": "HIRED_AT", "order": "ASC", "first": 5})
    assert body["errors"][0]["extensions"] == {"code": "BAD_USER_INPUT", "field": "orderBy"}


def test_search__every_role__reads_the_directory(api: Api, directory: Directory) -> None:
    employee = next(e for e in directory.employees if e.status is EmployeeStatus.ACTIVE and e is not directory.admin)
    found = walk(api.as_(employee), {"search": "ali", "order": "ASC"}, 50)
    assert [node["id"] for node in found] == directory.matching("ali")


def test_search__cost_limit__counts_it_like_any_list(api: Api, directory: Directory) -> None:
    caller = api.as_(directory.admin)
    fields = "edges { cursor node { id firstName lastName email role status department { name } } }"
    plain = " ".join(f"a{i}: employees(first: 100) {{ {fields} }}" for i in range(15))
    searched = " ".join(f'a{i}: employees(search: "al", first: 100) {{ {fields} }}' for i in range(15))
    refused = [caller.query(f"{{ organization {{ {q} }} }}")["errors"][0]["extensions"] for q in (plain, searched)]
    assert refused[0]["code"] == refused[1]["code"] == "BAD_USER_INPUT"
    assert refused[1]["cost"] == refused[0]["cost"] > 5_000


def test_search__other_organisation_with_the_same_names__never_listed(
    api: Api, directory: Directory, make_tenant: TenantFactory
) -> None:
    other = make_tenant()
    theirs = run(
        employees.create_employee(
            other.table,
            email=other.email("ali"),
            first_name="Ali",
            last_name="Alison",
            department_id=None,
            role=Role.EMPLOYEE,
        )
    )
    found = walk(api.as_(directory.admin), {"search": "ali", "order": "ASC"}, 100)
    assert ids.encode("Employee", theirs.emp_id) not in {node["id"] for node in found}
    assert [node["id"] for node in found] == directory.matching("ali")
    mine = walk(api.admin_of(other), {"search": "ali", "order": "ASC"}, 100)
    assert [node["id"] for node in mine] == [ids.encode("Employee", theirs.emp_id)]
