"""Global ids have one spelling: respelt ids are BAD_USER_INPUT, on queries and mutations alike."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from graphql_api.execution import ids
from graphql_api.execution.errors import ApiError
from tests.conftest import Tenant
from tests.graphql_api.fixtures import Api
from tests.graphql_api.schema.mutations.documents import UPDATE_EMPLOYEE, gid, open_job
from tests.graphql_api.security_world import World, build_world

ULID = "01HZX3V7Q4M2N8P5R6S7T8V9W3"


def respellings(type_name: str, *parts: str) -> dict[str, str]:
    """Ways to spell the id of ``type_name`` ``parts`` that decoders could take for it."""
    canonical = ids.encode(type_name, *parts)
    return {
        "lower-case-ulid": ids.encode(type_name, *(p.lower() for p in parts)),
        "zero-padded-ulid": ids.encode(type_name, *(f"0{p}" for p in parts)),
        "ulid-with-space": ids.encode(type_name, *(f" {p}" for p in parts)),
        "base64-padding": canonical + "=" * (4 - len(canonical) % 4 if len(canonical) % 4 else 4),
        "leading-space": f" {canonical}",
        "trailing-newline": f"{canonical}\n",
        "inner-whitespace": f"{canonical[:8]} {canonical[8:]}",
    }


# --- ids.decode / ids.parts_of -------------------------------------------------------------


def test_parts_of__canonical__the_ulids() -> None:
    assert ids.parts_of(ids.encode("Employee", ULID), "Employee", 1) == (ULID,)


def test_parts_of__another_type__none() -> None:
    assert ids.parts_of(ids.encode("Department", ULID), "Employee", 1) is None


@pytest.mark.parametrize("spelling", respellings("Employee", ULID).values(), ids=list(respellings("Employee", ULID)))
def test_parts_of__respelt__bad_user_input(spelling: str) -> None:
    with pytest.raises(ApiError) as raised:
        ids.parts_of(spelling, "Employee", 1, "input.id")
    assert raised.value.extensions == {"code": "BAD_USER_INPUT", "field": "input.id"}


def test_node_ids__decode__the_typed_id_or_not_found_for_another_type() -> None:
    assert ids.EMPLOYEE.decode(ids.encode("Employee", ULID), "input.id") == ULID
    assert ids.APPLICATION.decode(ids.encode("Application", ULID, ULID), "input.id") == (ULID, ULID)
    assert ids.EMPLOYEE.parse(ids.encode("Department", ULID), "input.id") is None
    with pytest.raises(ApiError) as raised:
        ids.EMPLOYEE.decode(ids.encode("Department", ULID), "input.id")
    assert raised.value.extensions == {"code": "NOT_FOUND"}
    with pytest.raises(ApiError) as raised:
        ids.EMPLOYEE.decode(ids.encode("Employee", ULID.lower()), "input.managerId")
    assert raised.value.extensions == {"code": "BAD_USER_INPUT", "field": "input.managerId"}


def test_decode__trailing_bits_set__bad_user_input() -> None:
    canonical = ids.encode("Employee", ULID)
    # The last base64 character carries unused bits when the length is not a multiple of 3:
    # another character with the same leading bits decodes to the same bytes.
    assert len(f"Employee:{ULID}") % 3 != 0
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    twin = canonical[:-1] + alphabet[alphabet.index(canonical[-1]) + 1]
    with pytest.raises(ApiError):
        ids.decode(twin)


URLSAFE = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


@given(st.text(alphabet=URLSAFE + "+/= \n\té:", max_size=60))
def test_decode__any_text__only_what_encode_spells(value: str) -> None:
    """Whatever a client sends: an id is decoded exactly when ``encode`` spells it so."""
    try:
        decoded = ids.decode(value)
    except ApiError as refused:
        assert refused.extensions == {"code": "BAD_USER_INPUT", "field": "id"}
        return
    assert ids.encode(decoded.type_name, *decoded.parts) == value
    assert decoded.type_name and decoded.parts and all(decoded.parts)


@given(st.text(min_size=1).filter(lambda t: ":" not in t), st.lists(st.text(min_size=1), min_size=1, max_size=3))
def test_decode__what_encode_spells__its_parts(type_name: str, parts: list[str]) -> None:
    parts = [part.replace(":", "") or "x" for part in parts]
    assert ids.decode(ids.encode(type_name, *parts)) == ids.GlobalId(type_name, tuple(parts))


# --- over HTTP ------------------------------------------------------------------------------


ROOT_QUERIES = {
    "node": "query($id: ID!) { node(id: $id) { id } }",
    "employee": "query($id: ID!) { employee(id: $id) { id } }",
    "department": "query($id: ID!) { department(id: $id) { id } }",
    "jobPosting": "query($id: ID!) { jobPosting(id: $id) { id } }",
    "application": "query($id: ID!) { application(id: $id) { id } }",
}


def targets(world: World) -> dict[str, tuple[str, tuple[str, ...]]]:
    return {
        "node": ("Employee", (world.employee.emp_id,)),
        "employee": ("Employee", (world.employee.emp_id,)),
        "department": ("Department", (world.d1.dept_id,)),
        "jobPosting": ("JobPosting", (world.j1.job_id,)),
        "application": ("Application", (world.a_e_j1.job_id, world.a_e_j1.app_id)),
    }


def test_root_fields__respelt_ids__bad_user_input_never_the_object(api: Api, tenant: Tenant) -> None:
    world = build_world(tenant)
    admin = api.admin_of(tenant)
    for field, (type_name, parts) in targets(world).items():
        canonical = ids.encode(type_name, *parts)
        assert admin.data(ROOT_QUERIES[field], {"id": canonical})[field] == {"id": canonical}
        for name, spelling in respellings(type_name, *parts).items():
            body: dict[str, Any] = admin.query(ROOT_QUERIES[field], {"id": spelling})
            assert body["data"] == {field: None}, (field, name)
            assert [e["extensions"]["code"] for e in body["errors"]] == ["BAD_USER_INPUT"], (field, name)


def test_node__respelt_organization_id__bad_user_input(api: Api, tenant: Tenant) -> None:
    admin = api.admin_of(tenant)
    for name, spelling in respellings("Organization", tenant.org_id).items():
        body = admin.query(ROOT_QUERIES["node"], {"id": spelling})
        assert [e["extensions"]["code"] for e in body["errors"]] == ["BAD_USER_INPUT"], name


def test_mutations__respelt_ids__bad_user_input_and_nothing_written(api: Api, tenant: Tenant) -> None:
    dept = tenant.department()
    person = tenant.employee(dept)
    job = open_job(tenant, dept)
    admin = api.admin_of(tenant)
    for name, spelling in respellings("Employee", person.emp_id).items():
        body = admin.query(UPDATE_EMPLOYEE, {"input": {"id": spelling, "expectedVersion": 1, "lastName": "Changed"}})
        assert body["errors"][0]["extensions"] == {"code": "BAD_USER_INPUT", "field": "input.id"}, name
    for name, spelling in respellings("Department", dept.dept_id).items():
        body = admin.query(
            "mutation($input: CreateJobPostingInput!) { createJobPosting(input: $input) { jobPosting { id } } }",
            {"input": {"departmentId": spelling, "title": "Welder"}},
        )
        assert body["errors"][0]["extensions"] == {"code": "BAD_USER_INPUT", "field": "input.departmentId"}, name
    assert admin.data(ROOT_QUERIES["employee"], {"id": gid(person)})["employee"] == {"id": gid(person)}
    jobs = admin.data("{ organization { jobPostings { edges { node { id } } } } }")
    assert [e["node"]["id"] for e in jobs["organization"]["jobPostings"]["edges"]] == [gid(job)]
    version = admin.data("query($id: ID!) { employee(id: $id) { version lastName } }", {"id": gid(person)})
    assert version["employee"] == {"version": 1, "lastName": person.last_name}
