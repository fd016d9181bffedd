"""Relay connections: page sizes and signed cursors."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Tenant
from tests.graphql_api.fixtures import Api

DEPARTMENTS = """
query($first: Int!, $after: String) {
  organization {
    departments(first: $first, after: $after) {
      edges { cursor node { name } }
      pageInfo { hasNextPage endCursor }
    }
  }
}"""


def codes(body: dict[str, Any]) -> list[str]:
    return [error["extensions"]["code"] for error in body.get("errors", [])]


@pytest.fixture
def five_departments(tenant: Tenant) -> Tenant:
    for index in range(5):
        tenant.department(f"Dept {index}")
    return tenant


def test_first__defaults_to_20_and_caps_at_100(api: Api, five_departments: Tenant) -> None:
    client = api.admin_of(five_departments)
    assert len(client.data(DEPARTMENTS, {"first": 100})["organization"]["departments"]["edges"]) == 5
    body = client.query(DEPARTMENTS, {"first": 101})
    assert codes(body) == ["BAD_USER_INPUT"]
    assert body["errors"][0]["extensions"]["field"] == "first"
    assert codes(client.query(DEPARTMENTS, {"first": -1})) == ["BAD_USER_INPUT"]


def test_pages__each_edge_cursor_resumes_after_it(api: Api, five_departments: Tenant) -> None:
    client = api.admin_of(five_departments)
    everything = client.data(DEPARTMENTS, {"first": 5})["organization"]["departments"]
    names = [edge["node"]["name"] for edge in everything["edges"]]
    assert everything["pageInfo"]["hasNextPage"] is False
    for index, edge in enumerate(everything["edges"]):
        rest = client.data(DEPARTMENTS, {"first": 5, "after": edge["cursor"]})["organization"]["departments"]
        assert [e["node"]["name"] for e in rest["edges"]] == names[index + 1 :]


def test_pages__walk_with_end_cursor(api: Api, five_departments: Tenant) -> None:
    client = api.admin_of(five_departments)
    seen: list[str] = []
    after = None
    while True:
        page = client.data(DEPARTMENTS, {"first": 2, "after": after})["organization"]["departments"]
        seen += [edge["node"]["name"] for edge in page["edges"]]
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert sorted(seen) == [f"Dept {i}" for i in range(5)]
    assert len(seen) == 5


def test_cursor__tampered__is_bad_user_input(api: Api, five_departments: Tenant) -> None:
    client = api.admin_of(five_departments)
    cursor = client.data(DEPARTMENTS, {"first": 1})["organization"]["departments"]["pageInfo"]["endCursor"]
    body_part, signature = cursor.split(".")
    flipped = body_part[:-2] + ("A" if body_part[-2] != "A" else "B") + body_part[-1]
    for forged in (f"{flipped}.{signature}", f"{body_part}.AAAA", "garbage", ""):
        assert codes(client.query(DEPARTMENTS, {"first": 1, "after": forged})) == ["BAD_USER_INPUT"]


def test_cursor__from_another_list__is_bad_user_input(api: Api, five_departments: Tenant) -> None:
    client = api.admin_of(five_departments)
    employees_cursor = client.data("{ organization { employees(first: 1) { pageInfo { endCursor } } } }")[
        "organization"
    ]["employees"]["pageInfo"]["endCursor"]
    assert codes(client.query(DEPARTMENTS, {"first": 1, "after": employees_cursor})) == ["BAD_USER_INPUT"]


def test_cursor__from_another_tenant__is_bad_user_input(api: Api, five_departments: Tenant, make_tenant: Any) -> None:
    other = make_tenant("Other")
    other.department("Theirs")
    foreign = api.admin_of(other).data(DEPARTMENTS, {"first": 1})["organization"]["departments"]["pageInfo"][
        "endCursor"
    ]
    body = api.admin_of(five_departments).query(DEPARTMENTS, {"first": 1, "after": foreign})
    assert codes(body) == ["BAD_USER_INPUT"]
