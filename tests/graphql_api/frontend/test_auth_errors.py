"""The Apollo Client link and the urql exchanges of docs/api/front-end.md, run by Node as printed.

Each client runs ``{ me { email } }`` against the server through the page's code, with a
session whose refresh hands out a fresh token (or is refused), and reports the data, how many
times it refreshed and signed out, and each HTTP status. ``extensions.reason`` is what they
decide on: TOKEN_EXPIRED is refreshed once, anything else ends the session.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any, Final

import jwt
import pytest

from datastore.tenants import employees
from graphql_api.auth.tokens import issue_token
from tests.blocking import run
from tests.conftest import Tenant
from tests.graphql_api.fixtures import Api
from tests.graphql_api.frontend.tools import apollo_client_modules, urql_modules
from tests.paths import FRONT_END, code_blocks

NODE = shutil.which("node")
HERE: Final = Path(__file__).parent / "auth_errors"
# The page's two blocks, in order, and the module each harness imports.
MODULES: Final = {"apollo": "auth-link.mjs", "urql": "auth-exchange.mjs"}


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    assert NODE is not None, "node is needed for the front-end auth tests; install Node.js"
    apollo_block, urql_block = code_blocks(FRONT_END, "js")
    folders = {}
    for client, modules, block in (
        ("apollo", apollo_client_modules(), apollo_block),
        ("urql", urql_modules(), urql_block),
    ):
        folder = tmp_path_factory.mktemp(f"auth-{client}")
        (folder / "node_modules").symlink_to(modules, target_is_directory=True)
        for name in ("session.mjs", f"{client}.mjs"):
            shutil.copy(HERE / name, folder / name)
        (folder / MODULES[client]).write_text(block)
        folders[client] = folder
    return folders


def run_frontend(work: dict[str, Path], frontend: str, url: str, token: str, fresh: str = "") -> dict[str, Any]:
    assert NODE is not None
    result = subprocess.run(
        [NODE, f"{frontend}.mjs", url, token, fresh],
        cwd=work[frontend],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    output: dict[str, Any] = json.loads(result.stdout)
    return output


def expired(api: Api, tenant: Tenant, employee: Any = None) -> str:
    person = employee or tenant.admin
    return issue_token(
        api.settings, subject=person.emp_id, org_id=person.org_id, role=person.role.value, ttl_seconds=-60
    )


def url_of(api: Api) -> str:
    return str(api.http.base_url.join("/graphql"))


@pytest.mark.parametrize("frontend", ["apollo", "urql"])
def test_expired_token__refreshed_once__answered(
    work: dict[str, Path], api: Api, tenant: Tenant, frontend: str
) -> None:
    output = run_frontend(work, frontend, url_of(api), expired(api, tenant), fresh=api.token(tenant.admin))
    assert (
        output["data"] == {"me": {"email": tenant.admin.email}} or output["data"]["me"]["email"] == tenant.admin.email
    )
    assert (output["refreshes"], output["signOuts"], output["statuses"]) == (1, 0, [401, 200]), output


@pytest.mark.parametrize("frontend", ["apollo", "urql"])
def test_expired_token__refresh_refused__signed_out(
    work: dict[str, Path], api: Api, tenant: Tenant, frontend: str
) -> None:
    output = run_frontend(work, frontend, url_of(api), expired(api, tenant))
    assert output["data"] is None and output["error"]
    assert (output["refreshes"], output["signOuts"], output["statuses"]) == (1, 1, [401]), output


@pytest.mark.parametrize("frontend", ["apollo", "urql"])
def test_forged_token__no_refresh__signed_out(work: dict[str, Path], api: Api, tenant: Tenant, frontend: str) -> None:
    claims = jwt.decode(api.token(tenant.admin), options={"verify_signature": False})
    forged = jwt.encode(claims, "not-the-secret-" * 4, algorithm="HS256")
    output = run_frontend(work, frontend, url_of(api), forged, fresh=api.token(tenant.admin))
    assert output["data"] is None and output["error"]
    assert (output["refreshes"], output["signOuts"], output["statuses"]) == (0, 1, [401]), output


@pytest.mark.parametrize("frontend", ["apollo", "urql"])
def test_terminated_employee__refused_inside_graphql__signed_out(
    work: dict[str, Path], api: Api, tenant: Tenant, frontend: str
) -> None:
    leaver = tenant.employee()
    token = api.token(leaver)
    run(employees.terminate_employee(tenant.table, leaver.emp_id))
    output = run_frontend(work, frontend, url_of(api), token, fresh=token)
    assert (output["refreshes"], output["signOuts"], output["statuses"]) == (0, 1, [401]), output


@pytest.mark.parametrize("frontend", ["apollo", "urql"])
def test_terminated_employees_expired_token__refreshed_then_signed_out(
    work: dict[str, Path], api: Api, tenant: Tenant, frontend: str
) -> None:
    """TOKEN_EXPIRED comes first (a token is checked before the account); the refreshed token
    then meets ACCOUNT_INACTIVE, and no second refresh is tried."""
    leaver = tenant.employee()
    fresh = api.token(leaver)
    run(employees.terminate_employee(tenant.table, leaver.emp_id))
    output = run_frontend(work, frontend, url_of(api), expired(api, tenant, leaver), fresh=fresh)
    assert (output["refreshes"], output["signOuts"], output["statuses"]) == (1, 1, [401, 401]), output
