"""Apollo Client's automatic persisted queries link against the server, run by Node.

The link sends a query's hash first; on PERSISTED_QUERY_NOT_FOUND it sends the hash with the
text, which the server stores for the caller's organisation, so the next run, and another
client of the same organisation, send the hash alone. A client of another organisation, an
anonymous one and a platform operator are never found, and the link sends the text each
time: it keeps working for every caller, and registering stays the signed-in caller's.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import Tenant, TenantFactory
from tests.graphql_api.fixtures import Api
from tests.graphql_api.frontend.tools import APOLLO_CLIENT, apollo_client_modules

# The Node.js a fresh machine gets from Debian is enough; it must be there (no skipping).
NODE = shutil.which("node")
HASH = {"sentText": False}
TEXT = {"sentText": True}
NOT_FOUND = ["PERSISTED_QUERY_NOT_FOUND"]


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    assert NODE is not None, "node is needed for the Apollo Client test; install Node.js and npm"
    folder = tmp_path_factory.mktemp("apollo-client")
    (folder / "node_modules").symlink_to(apollo_client_modules(), target_is_directory=True)
    shutil.copy(APOLLO_CLIENT / "client.mjs", folder / "client.mjs")
    return folder


def apollo(work: Path, http: httpx.Client, token: str, query: str, runs: int, method: str = "post") -> dict[str, Any]:
    """What one Apollo Client (a fresh link, as after a page load) did running ``query`` ``runs`` times."""
    assert NODE is not None
    url = str(http.base_url.join("/graphql"))
    result = subprocess.run(
        [NODE, "client.mjs", url, token, query, str(runs), method],
        cwd=work,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    output: dict[str, Any] = json.loads(result.stdout)
    return output


def exchanges(output: dict[str, Any]) -> list[tuple[bool, int, list[str | None]]]:
    return [(exchange["sentText"], exchange["status"], exchange["codes"]) for exchange in output["exchanges"]]


def emails(output: dict[str, Any]) -> list[str]:
    """Each run's ``me.email`` (Apollo's cache adds ``__typename`` to what it returns)."""
    return [result["data"]["me"]["email"] for result in output["results"]]


def me_query(tenant: Tenant, name: str) -> str:
    """A query text no other test sends (its hash is new to the table)."""
    return f"query {name}{tenant.org_id[-8:]} {{ me {{ email }} }}"


@pytest.mark.parametrize("method", ["post", "get"])
def test_signed_in__not_found_then_text_then_hash_alone(
    work: Path, http: httpx.Client, api: Api, tenant: Tenant, method: str
) -> None:
    token = api.token(tenant.admin)
    query = me_query(tenant, f"Apq{method.title()}")
    first = apollo(work, http, token, query, runs=2, method=method)
    assert emails(first) == [tenant.admin.email] * 2
    assert exchanges(first) == [(False, 200, NOT_FOUND), (True, 200, []), (False, 200, [])]
    if method == "get":
        assert [exchange["method"] for exchange in first["exchanges"]] == ["GET", "POST", "GET"]
    # Another client of the organisation (a new page load): found at once, by hash alone.
    colleague = tenant.employee()
    second = apollo(work, http, api.token(colleague), query, runs=1)
    assert emails(second) == [colleague.email]
    assert exchanges(second) == [(False, 200, [])]


def test_other_organisation__never_finds_it__the_link_sends_the_text(
    work: Path, http: httpx.Client, api: Api, tenant: Tenant, make_tenant: TenantFactory
) -> None:
    query = me_query(tenant, "ApqOwn")
    apollo(work, http, api.token(tenant.admin), query, runs=1)
    other = make_tenant()
    output = apollo(work, http, api.token(other.admin), query, runs=1)
    assert emails(output) == [other.admin.email]
    assert exchanges(output) == [(False, 200, NOT_FOUND), (True, 200, [])]


@pytest.mark.parametrize("caller", ["anonymous", "platform operator"])
def test_without_an_organisation__every_run_sends_the_text_and_works(
    work: Path, http: httpx.Client, api: Api, tenant: Tenant, caller: str
) -> None:
    token = "" if caller == "anonymous" else (api.platform.token or "")
    query = f"query Anon{tenant.org_id[-8:]} {{ __typename }}"
    output = apollo(work, http, token, query, runs=2)
    assert [result["data"] for result in output["results"]] == [{"__typename": "Query"}] * 2, output
    assert exchanges(output) == [(False, 200, NOT_FOUND), (True, 200, [])] * 2
