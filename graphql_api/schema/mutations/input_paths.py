"""Where each datastore field sits in each mutation's input: the table errors are placed by.

The datastore names what it refuses in its own words, its entities' field names
(``first_name``, ``department_id``; ``datastore.errors.Field``). Each mutation says here,
once, which of its input's fields carries each datastore field it hands over, and
``execution/errors.py`` places a refusal at ``input.<that field>``; a datastore field the
input does not carry (a terminated employee's department that is gone, a request that
changes nothing) names the input as a whole, ``input``. An id's own failures (not an id,
an id of another type) are the edge's, raised where the resolver decodes it.

Checked at import: every mutation has its row, and every row names fields its input has.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from strawberry.types.base import get_object_definition
from strawberry.utils.str_converters import to_camel_case

from datastore.errors import Field
from graphql_api.execution.errors import INPUT, FieldPaths
from graphql_api.schema.mutation import Mutation

# Every write under an idempotency key may refuse the key.
_KEYED: Final[Mapping[Field, str]] = {"idempotency_key": "idempotencyKey"}

# Mutation (its GraphQL name) -> datastore field -> the input field that carries it.
_DECLARED: Final[Mapping[str, Mapping[Field, str]]] = {
    "createDepartment": {"name": "name", "manager_id": "managerId", **_KEYED},
    "updateDepartment": {"dept_id": "id", "name": "name", "manager_id": "managerId", **_KEYED},
    "createEmployee": {
        "email": "email",
        "first_name": "firstName",
        "last_name": "lastName",
        "role": "role",
        "department_id": "departmentId",
        **_KEYED,
    },
    "updateEmployee": {
        "emp_id": "id",
        "email": "email",
        "first_name": "firstName",
        "last_name": "lastName",
        "role": "role",
        **_KEYED,
    },
    "moveEmployee": {"emp_id": "id", "department_id": "departmentId", **_KEYED},
    "terminateEmployee": {"emp_id": "id", **_KEYED},
    "erasePerson": {"emp_id": "id"},
    "setAuditRetention": {"audit_retention_days": "days"},
    # importEmployees places each row's errors in its results (graphql_api/bulk/rows.py).
    "importEmployees": {},
    "createJobPosting": {"department_id": "departmentId", "title": "title", "description": "description", **_KEYED},
    "updateJobPosting": {
        "job_id": "id",
        "title": "title",
        "description": "description",
        "department_id": "departmentId",
        **_KEYED,
    },
    "publishJobPosting": {"job_id": "id", **_KEYED},
    "closeJobPosting": {"job_id": "id", **_KEYED},
    "applyToJob": {"job_id": "jobPostingId", **_KEYED},
    # Withdrawing has no status of its own: a refused transition is about the application.
    "withdrawApplication": {"job_id": "id", "app_id": "id", "status": "id", **_KEYED},
    "setApplicationStatus": {"job_id": "id", "app_id": "id", "status": "status", **_KEYED},
    "createOrganization": {
        "name": "name",
        "email_domains": "emailDomains",
        "email": "adminEmail",
        "first_name": "adminFirstName",
        "last_name": "adminLastName",
    },
    "addEmailDomain": {"org_id": "orgId", "domain": "domain"},
    "closeOrganization": {"org_id": "orgId"},
    "createApiKey": {"name": "name", "role": "role"},
    "revokeApiKey": {"key_id": "id"},
    "createWebhookEndpoint": {"url": "url", "event_types": "eventTypes", "description": "description"},
    "updateWebhookEndpoint": {
        "url": "url",
        "event_types": "eventTypes",
        "description": "description",
        "endpoint_id": "id",
    },
    "deleteWebhookEndpoint": {"endpoint_id": "id"},
    "rotateWebhookSecret": {"endpoint_id": "id"},
    "redeliverWebhook": {"delivery_id": "deliveryId"},
    "setIdentityProvider": {"issuer": "issuer", "client_ids": "clientIds", "org_id": "organizationId"},
    "removeIdentityProvider": {"org_id": "organizationId"},
    "signOut": {"secret": "refreshToken"},
    "signOutEverywhere": {"emp_id": "employeeId"},
}


def _checked(declared: Mapping[str, Mapping[Field, str]]) -> dict[str, FieldPaths]:
    """``declared`` as full paths, once every mutation has a row naming its own input's fields."""
    table: dict[str, FieldPaths] = {}
    for field in get_object_definition(Mutation, strict=True).fields:
        name = field.graphql_name or to_camel_case(field.python_name)
        [argument] = field.arguments
        input_type = get_object_definition(argument.type, strict=True)
        # The schema's auto_camel_case gives these names (tests/graphql_api/schema/mutations/test_input_paths.py).
        fields = {f.graphql_name or to_camel_case(f.python_name) for f in input_type.fields}
        if name not in declared:
            raise ValueError(f"the mutation {name} has no row in input_paths")
        unknown = set(declared[name].values()) - fields
        if unknown:
            raise ValueError(f"{input_type.name} has no field {', '.join(sorted(unknown))}")
        table[name] = {datastore: f"{INPUT}.{carrier}" for datastore, carrier in declared[name].items()}
    extra = set(declared) - set(table)
    if extra:
        raise ValueError(f"input_paths names no mutation {', '.join(sorted(extra))}")
    return table


INPUT_PATHS: Final = _checked(_DECLARED)
"""Mutation -> where each datastore field sits in its input (``input.firstName``)."""
