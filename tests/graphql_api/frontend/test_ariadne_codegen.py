"""ariadne-codegen generates a typed Python client from schema.graphql that works against the server.

The README's command, run on tests/graphql_api/frontend/ariadne/ (its pyproject.toml and
operations.graphql); the generated package is imported and called over HTTP.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import tomllib
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from types import ModuleType
from typing import Any

import pytest

from tests.conftest import Tenant
from tests.graphql_api.fixtures import Api, Demo
from tests.graphql_api.frontend.tools import HERE, ariadne_codegen
from tests.paths import ROOT

CONFIG = HERE / "ariadne" / "pyproject.toml"
REPO = ROOT


@pytest.fixture(scope="module")
def hr_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    """The generated package ``hr_client``, from the committed configuration."""
    settings = tomllib.loads(CONFIG.read_text())["tool"]["ariadne-codegen"]
    schema = (CONFIG.parent / settings["schema_path"]).resolve()
    assert schema == REPO / "schema.graphql", "the configuration must read the repository's schema.graphql"
    work = tmp_path_factory.mktemp("ariadne")
    # The same configuration with its two paths made absolute, generating into the scratch folder.
    text = CONFIG.read_text()
    text = text.replace(f'"{settings["schema_path"]}"', f'"{schema}"')
    text = text.replace(f'"{settings["queries_path"]}"', f'"{CONFIG.parent / settings["queries_path"]}"')
    (work / "pyproject.toml").write_text(text)
    result = subprocess.run(
        [str(ariadne_codegen()), "--config", "pyproject.toml", "client"],
        cwd=work,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    sys.path.insert(0, str(work))
    try:
        yield importlib.import_module(settings["target_package_name"])
    finally:
        sys.path.remove(str(work))
        for name in [name for name in sys.modules if name.split(".")[0] == "hr_client"]:
            del sys.modules[name]


@pytest.fixture
def client_of(hr_client: ModuleType, server_url: str) -> Iterator[Callable[[str], Any]]:
    """Generated clients holding a bearer token; each is a context manager that closes its connection."""
    with ExitStack() as clients:

        def client(token: str) -> Any:
            headers = {"Authorization": f"Bearer {token}"}
            return clients.enter_context(hr_client.HrClient(url=f"{server_url}/graphql", headers=headers))

        yield client


def test_ariadne_client__me__typed_result(
    hr_client: ModuleType, client_of: Callable[[str], Any], api: Api, demo: Demo
) -> None:
    client = client_of(api.token(demo.person("alice@acme.co")))
    result = client.me()
    assert isinstance(result, hr_client.Me)
    assert result.me.email == "alice@acme.co"
    assert result.me.role is hr_client.Role.ADMIN


def test_ariadne_client__directory__typed_pages(
    hr_client: ModuleType, client_of: Callable[[str], Any], api: Api, demo: Demo
) -> None:
    client = client_of(api.token(demo.person("alice@acme.co")))
    result = client.directory(departments=10, people=2)
    assert isinstance(result, hr_client.Directory)
    departments = [edge.node for edge in result.organization.departments.edges]
    assert "Engineering" in {department.name for department in departments}
    for department in departments:
        people = department.employees.edges
        assert len(people) <= 2
        assert all(isinstance(edge.node.role, hr_client.Role) for edge in people)
        assert department.employees.page_info.has_next_page == (department.headcount > 2)


def test_ariadne_client__mutation_retried_with_key__same_department(
    hr_client: ModuleType, client_of: Callable[[str], Any], api: Api, tenant: Tenant
) -> None:
    client = client_of(api.token(tenant.admin))
    department_input = hr_client.CreateDepartmentInput(name="Design", idempotency_key="create-design-1")
    first = client.create_department(input=department_input)
    retry = client.create_department(input=department_input)
    assert isinstance(first, hr_client.CreateDepartment)
    assert first.create_department.department.name == "Design"
    assert retry == first


def test_ariadne_client__forbidden__error_carries_code(
    hr_client: ModuleType, client_of: Callable[[str], Any], api: Api, demo: Demo
) -> None:
    client = client_of(api.token(demo.person("dave@acme.co")))
    with pytest.raises(hr_client.GraphQLClientGraphQLMultiError) as raised:
        client.create_department(input=hr_client.CreateDepartmentInput(name="Nope"))
    assert [error.extensions["code"] for error in raised.value.errors] == ["FORBIDDEN"]
