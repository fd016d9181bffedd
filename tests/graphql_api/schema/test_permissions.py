"""Field-level rules (graphql_api/schema/permissions.py) as functions of the caller alone."""

from __future__ import annotations

from types import SimpleNamespace
from typing import cast

import pytest

from datastore.kinds.entities import Role
from datastore.values.ids import OrgId, new_id
from graphql_api.execution.errors import ApiError
from graphql_api.request.context import RequestContext
from graphql_api.request.principal import Principal
from graphql_api.schema import permissions

ORG, OWN, OTHER = OrgId(new_id()), new_id(), new_id()

CALLERS = {
    "employee": Principal(OWN, ORG, Role.EMPLOYEE),
    "manager": Principal(OWN, ORG, Role.MANAGER),
    "admin": Principal(OWN, ORG, Role.ADMIN),
    "employee key": Principal(new_id(), ORG, Role.EMPLOYEE, api_key=True),
    "admin key": Principal(new_id(), ORG, Role.ADMIN, api_key=True),
    "platform operator": Principal(OWN, None, None),
    "no credential": None,
}


@pytest.mark.parametrize("emp_id", [OWN, OTHER], ids=["own", "another's"])
@pytest.mark.parametrize("caller", CALLERS)
def test_may_read_employee_applications__agrees_with_the_check(caller: str, emp_id: str) -> None:
    """The yes-or-no a read ahead asks (types/employee.py) is the field's own rule: never a
    read the field would refuse, nor a refusal of one it allows."""
    # The rules read only the caller from the context.
    context = cast(RequestContext, SimpleNamespace(principal=CALLERS[caller]))
    try:
        permissions.check_employee_applications(context, emp_id)
    except ApiError:
        allowed = False
    else:
        allowed = True
    assert permissions.may_read_employee_applications(context, emp_id) is allowed
    admins = ("admin", "admin key")
    assert allowed is (caller in admins or (emp_id == OWN and caller in ("employee", "manager")))
