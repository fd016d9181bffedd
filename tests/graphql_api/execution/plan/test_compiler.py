"""The compiler's per-type decisions that let the runner skip work per object."""

from __future__ import annotations

from typing import Any

import pytest
from graphql import (
    GraphQLError,
    GraphQLField,
    GraphQLObjectType,
    GraphQLResolveInfo,
    GraphQLSchema,
    GraphQLString,
    parse,
)
from graphql.execution.values import get_variable_values

from bench.queries import Q1, Q2
from graphql_api.execution import library_internals
from graphql_api.execution.plan.compiler import ObjectPlan, compile_operation
from graphql_api.schema.executable import build_schema
from graphql_api.schema.types.employee import Employee


def _object_plans(query: str) -> dict[str, ObjectPlan]:
    graphql_schema = library_internals.graphql_schema(build_schema())
    document = parse(query)
    operation = document.definitions[0]
    variables = get_variable_values(graphql_schema, [], {})
    plan = compile_operation(graphql_schema, operation, {}, variables)  # type: ignore[arg-type]  # a query
    found: dict[str, ObjectPlan] = {}
    stack = [plan.root]
    while stack:
        object_plan = stack.pop()
        if object_plan.type.name in found:
            continue
        found[object_plan.type.name] = object_plan
        for field in object_plan.fields:
            completion = field.completion
            while completion is not None and completion.item is not None:
                completion = completion.item
            if completion is not None:
                stack.extend([completion.plan] if completion.plan else completion.plans.values())
    return found


def test_object_plans__strawberry_type_checks__need_no_resolve_info() -> None:
    plans = {**_object_plans(Q1), **_object_plans(Q2)}
    # The nodes of the bench's pages implement Node: Strawberry gives them an is_type_of.
    checked = {name for name, plan in plans.items() if plan.type.is_type_of is not None}
    assert {"Employee", "Department", "JobPosting", "Application"} <= checked
    assert [name for name in checked if plans[name].type_check_reads_info] == []


def test_object_plan__own_is_type_of__gets_resolve_info() -> None:
    def is_type_of(value: Any, info: GraphQLResolveInfo) -> bool:
        return info.field_name == "own"

    own = GraphQLObjectType("Own", {"name": GraphQLField(GraphQLString)}, is_type_of=is_type_of)
    root = GraphQLObjectType("Query", {"own": GraphQLField(own, resolve=lambda *_: object())})
    custom = GraphQLSchema(root)
    operation = parse("{ own { name } }").definitions[0]
    plan = compile_operation(custom, operation, {}, get_variable_values(custom, [], {}))  # type: ignore[arg-type]
    own_plan = plan.root.fields[0].completion.plan  # type: ignore[union-attr]
    assert own_plan is not None and own_plan.type_check_reads_info is True


def test_relation_fields__declared_read__planned_without_resolver_call() -> None:
    plans = _object_plans(Q2)
    employee = next(f for f in plans["Application"].fields if f.name == "employee")
    department = next(f for f in plans["Employee"].fields if f.name == "department")
    assert employee.preread is not None and department.preread is not None
    # A field with arguments (a connection) keeps its resolver.
    applications = next(f for f in plans["JobPosting"].fields if f.name == "applications")
    assert applications.preread is None


def test_enum_leaf__values_members_and_unknowns__same_as_the_type() -> None:
    plans = _object_plans(Q1)
    role = next(f for f in plans["Employee"].fields if f.name == "role").completion
    assert role is not None and role.leaf_output is not None
    enum = role.type
    for name, value in enum.values.items():
        assert role.leaf_output(value.value) == enum.coerce_output_value(value.value) == name
    for member in enum.wrapped_cls:
        assert role.leaf_output(member) == enum.coerce_output_value(member) == member.name
    errors = []
    for coerce in (role.leaf_output, enum.coerce_output_value):
        with pytest.raises(GraphQLError) as raised:
            coerce("no such role")
        errors.append(str(raised.value))
    assert errors[0] == errors[1]


def test_root_fields_by_id__declared_load__planned_without_resolver_call() -> None:
    """The root fields by id are declared by their loads (execution/fields.py), arguments and all;
    a field that reads in two steps (by email, then by id) keeps its resolver."""
    root = _object_plans(
        '{ me { email } organization { name } node(id: "x") { id } employee(id: "x") { email } '
        'department(id: "x") { name } jobPosting(id: "x") { title } application(id: "x") { status } '
        'employeeByEmail(email: "a@b.co") { email } }'
    )["Query"]
    loads = {field.name for field in root.fields if field.load is not None}
    assert loads == {"me", "organization", "node", "employee", "department", "jobPosting", "application"}
    assert next(f for f in root.fields if f.name == "node").arguments == {"id": "x"}


def test_string_id_boolean_leaves__passthrough_type__is_what_their_coercion_returns_unchanged() -> None:
    """A str for a String or an ID and a bool for a Boolean are their own output: the runner
    writes them without calling the coercion. Other leaves (enums, DateTime, Int) keep it."""
    plans = _object_plans(
        "{ organization { id name departments(first: 1) { pageInfo { hasNextPage } "
        "edges { node { headcount employees { edges { node { role hiredAt } } } } } } } }"
    )
    by_name = {field.name: field for plan in plans.values() for field in plan.fields}
    for name, kind, sample in (("id", str, "x"), ("name", str, "Acme"), ("hasNextPage", bool, True)):
        field = by_name[name]
        assert field.completion is not None and field.completion.leaf_output is not None
        assert field.passthrough is kind and field.completion.passthrough is kind, name
        assert field.completion.leaf_output(sample) is sample
    for name in ("headcount", "role", "hiredAt", "edges"):
        assert by_name[name].passthrough is None, name


def test_object_plans__strawberry_type_checks__know_the_class_they_pass() -> None:
    plans = {**_object_plans(Q1), **_object_plans(Q2)}
    assert plans["Employee"].origin is Employee
    assert plans["Query"].origin is None  # no is_type_of at all
