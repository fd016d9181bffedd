"""Two organisations, each with its own real OpenID provider, and the platform's provider besides.

Three oidc-provider processes (tests/graphql_api/oidc.py): Acme's (registered by its admin
through setIdentityProvider), Globex's (registered by the platform operator at onboarding)
and the platform's (OIDC_ISSUER). People sign in with the code flow and PKCE over HTTP, then
exchange the ID token at POST /auth/token, refresh, rotate, reuse a used refresh token, sign
out; a provider signs in only its own organisation's people. The server runs in development
(HR_ENV=development): the providers are http:// on the loopback, which is refused anywhere
else (tests/graphql_api/auth/test_outbound.py).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest

from datastore.aws.calls import CallLog
from datastore.aws.client import AsyncDynamo
from datastore.kinds.entities import Employee, Organization, Plan, Role
from datastore.signin import identity_providers
from datastore.table.scoped import Table
from datastore.tenancy.scope import PlatformScope, TenantScope
from datastore.tenants import employees, organizations
from datastore.values import ids
from graphql_api.app import create_app
from graphql_api.auth.signin import GRANT_TYPE, ID_TOKEN_TYPE, REFRESH_REFUSED, REFUSED
from graphql_api.auth.tokens import PLATFORM_ROLE, issue_token
from graphql_api.execution import ids as global_ids
from graphql_api.schema.mutations.sign_in import API_KEY_REFUSED
from graphql_api.settings.api import ApiSettings
from tests.blocking import run
from tests.conftest import DatastoreFactory, unique_domain
from tests.graphql_api.fixtures import TEST_SECRET
from tests.graphql_api.live import serving
from tests.graphql_api.oidc import CodeFlow, Provider, running_provider

SET_PROVIDER = """mutation Set($input: SetIdentityProviderInput!) {
  setIdentityProvider(input: $input) { registered identityProvider { issuer clientIds authorizationEndpoint version } }
}"""


@dataclass
class Org:
    organization: Organization
    admin: Employee
    table: Table

    @property
    def domain(self) -> str:
        return self.organization.email_domains[0]

    def person(self, local: str, role: Role = Role.EMPLOYEE) -> Employee:
        return run(
            employees.create_employee(
                self.table,
                email=f"{local}@{self.domain}",
                first_name="Test",
                last_name=local,
                department_id=None,
                role=role,
            )
        )


def _org(platform: Table, name: str) -> Org:
    domain = unique_domain()
    organization, admin = run(
        organizations.create_organization(
            platform,
            name=f"{name} {domain[:8]}",
            plan=Plan.PRO,
            email_domains=[domain],
            admin_email=f"admin@{domain}",
            admin_first_name="Ada",
            admin_last_name=name,
        )
    )
    return Org(organization, admin, platform.with_scope(TenantScope(organization.org_id, admin.emp_id)))


@dataclass
class World:
    http: httpx.Client
    settings: ApiSettings
    acme: Org
    globex: Org
    third: Org
    acme_idp: Provider
    globex_idp: Provider
    platform_idp: Provider
    people: dict[str, Employee]

    def token(self, employee: Employee) -> str:
        return issue_token(self.settings, subject=employee.emp_id, org_id=employee.org_id, role=employee.role.value)

    def graphql(self, token: str, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        response = self.http.post(
            "/graphql",
            json={"query": query, "variables": variables or {}},
            headers={"Authorization": f"Bearer {token}"},
        )
        body: dict[str, Any] = response.json()
        return body

    def discover(self, email: str) -> httpx.Response:
        return self.http.get("/auth/discovery", params={"email": email})

    def sign_in(self, email: str, login: str) -> httpx.Response:
        """Discovery for the email, the code flow at the provider it names, then the exchange."""
        flow = CodeFlow.from_discovery(self.discover(email).json())
        return self.exchange(flow.sign_in(login))

    def exchange(self, id_token: str) -> httpx.Response:
        form = {"grant_type": GRANT_TYPE, "subject_token_type": ID_TOKEN_TYPE, "subject_token": id_token}
        return self.http.post("/auth/token", data=form)

    def refresh(self, refresh_token: str) -> httpx.Response:
        return self.http.post("/auth/token", data={"grant_type": "refresh_token", "refresh_token": refresh_token})

    def me(self, access_token: str) -> httpx.Response:
        return self.http.post(
            "/graphql", json={"query": "{ me { email } }"}, headers={"Authorization": f"Bearer {access_token}"}
        )


@pytest.fixture(scope="module")
def world(
    new_datastore: DatastoreFactory, table_name: str, tmp_path_factory: pytest.TempPathFactory, dynamo: AsyncDynamo
) -> Iterator[World]:
    platform = Table(dynamo, table_name, PlatformScope())
    acme, globex, third = _org(platform, "Acme"), _org(platform, "Globex"), _org(platform, "Third")
    bob = acme.person("bob")
    leaver = acme.person("leaver")
    people = {"bob": bob, "leaver": leaver}
    folder = tmp_path_factory.mktemp("oidc")
    acme_people = {
        "alice": acme.admin.email,
        "bob": bob.email,
        "leaver": leaver.email,
        # Acme's provider vouches for an address at Globex: it must sign nobody in.
        "mallory": globex.admin.email,
    }
    with (
        running_provider(folder / "acme", acme_people) as acme_idp,
        running_provider(folder / "globex", {"gina": globex.admin.email}) as globex_idp,
        running_provider(folder / "platform", {"tess": third.admin.email, "alice": acme.admin.email}) as platform_idp,
    ):
        settings = ApiSettings.from_env(
            {
                "HR_ENV": "development",
                "JWT_SECRET": TEST_SECRET,
                "ALLOWED_HOSTS": "127.0.0.1",
                "OIDC_ISSUER": platform_idp.issuer,
                "OIDC_AUDIENCE": platform_idp.client_id,
                "OIDC_JWKS": f"{platform_idp.issuer}/jwks",
            }
        )
        with serving(create_app(new_datastore(table_name), settings)) as http:
            found = World(http, settings, acme, globex, third, acme_idp, globex_idp, platform_idp, people)
            # Acme's admin registers Acme's provider; the operator registers Globex's at onboarding.
            registered = found.graphql(
                found.token(acme.admin),
                SET_PROVIDER,
                {"input": {"issuer": acme_idp.issuer, "clientIds": [acme_idp.client_id]}},
            )
            assert registered["data"]["setIdentityProvider"]["registered"] is True, registered
            operator = issue_token(settings, subject="operator", org_id=None, role=PLATFORM_ROLE)
            onboarded = found.graphql(
                operator,
                SET_PROVIDER,
                {
                    "input": {
                        "issuer": globex_idp.issuer,
                        "clientIds": [globex_idp.client_id],
                        "organizationId": ids_of(globex.organization),
                    }
                },
            )
            assert onboarded["data"]["setIdentityProvider"]["registered"] is True, onboarded
            yield found


def ids_of(organization: Organization) -> str:
    from graphql_api.execution import ids as global_ids

    return global_ids.encode("Organization", organization.org_id)


def signed_in(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert set(body) >= {"access_token", "refresh_token", "expires_in", "token_type"}
    return body


def refused(response: httpx.Response, description: str) -> None:
    assert response.status_code == 400, response.text
    assert response.json() == {"error": "invalid_grant", "error_description": description}


# --- discovery ------------------------------------------------------------------------------


def test_discovery__each_domain_its_provider_others_the_platforms_identically(world: World) -> None:
    acme = world.discover(f"anyone@{world.acme.domain}")
    assert acme.status_code == 200 and acme.headers["cache-control"] == "no-store"
    assert acme.json() == {
        "issuer": world.acme_idp.issuer,
        "authorization_endpoint": f"{world.acme_idp.issuer}/auth",
        "token_endpoint": f"{world.acme_idp.issuer}/token",
        "client_id": world.acme_idp.client_id,
    }
    assert world.discover(f"gina@{world.globex.domain}").json()["issuer"] == world.globex_idp.issuer
    without = world.discover(f"tess@{world.third.domain}")
    unknown = world.discover(f"someone@{unique_domain()}")
    assert without.json()["issuer"] == world.platform_idp.issuer
    # A customer's domain without a provider and a domain nobody owns: the same bytes.
    assert (without.status_code, without.content) == (unknown.status_code, unknown.content)


@pytest.mark.parametrize("email", ["", "not-an-email", "a@b@c.example"])
def test_discovery__not_an_email__invalid_request(world: World, email: str) -> None:
    response = world.discover(email)
    assert response.status_code == 400 and response.json()["error"] == "invalid_request"


# --- signing in, refreshing, signing out --------------------------------------------------------


def test_sign_in__acme_through_acme_provider__refresh_rotates_reuse_ends_the_family(world: World) -> None:
    first = signed_in(world.sign_in(world.acme.admin.email, "alice"))
    claims = jwt.decode(first["access_token"], TEST_SECRET, algorithms=["HS256"])
    assert claims["org"] == world.acme.organization.org_id and ids.parse(str, claims["sid"]) is not None
    assert world.me(first["access_token"]).json()["data"] == {"me": {"email": world.acme.admin.email}}

    second = signed_in(world.refresh(first["refresh_token"]))
    assert second["refresh_token"] != first["refresh_token"]
    assert jwt.decode(second["access_token"], TEST_SECRET, algorithms=["HS256"])["sid"] == claims["sid"]
    assert world.me(second["access_token"]).json()["data"] == {"me": {"email": world.acme.admin.email}}
    third = signed_in(world.refresh(second["refresh_token"]))

    # The first token again: a reuse. Its whole family ends, the newest token too.
    refused(world.refresh(first["refresh_token"]), REFRESH_REFUSED)
    refused(world.refresh(third["refresh_token"]), REFRESH_REFUSED)


def test_sign_in__globex_through_the_provider_the_operator_registered(world: World) -> None:
    body = signed_in(world.sign_in(world.globex.admin.email, "gina"))
    assert world.me(body["access_token"]).json()["data"] == {"me": {"email": world.globex.admin.email}}


def test_sign_in__organisation_without_provider__through_the_platforms(world: World) -> None:
    body = signed_in(world.sign_in(world.third.admin.email, "tess"))
    assert world.me(body["access_token"]).json()["data"] == {"me": {"email": world.third.admin.email}}


def test_sign_in__globex_email_through_acme_provider__refused_like_any_account_and_logged(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    id_token = CodeFlow.from_discovery(world.discover(world.acme.admin.email).json()).sign_in("mallory")
    assert jwt.decode(id_token, options={"verify_signature": False})["email"] == world.globex.admin.email
    with caplog.at_level(logging.INFO, logger="hr.signin"):
        response = world.exchange(id_token)
    refused(response, REFUSED)
    [line] = [r.getMessage() for r in caplog.records if r.name == "hr.signin"]
    assert f"belongs to organisation {world.globex.organization.org_id}, not to" in line
    assert world.acme_idp.issuer in line


def test_sign_in__acme_person_through_the_platforms_provider__refused(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    flow = CodeFlow.from_discovery(world.discover(world.third.admin.email).json())  # the platform's
    with caplog.at_level(logging.INFO, logger="hr.signin"):
        response = world.exchange(flow.sign_in("alice"))
    refused(response, REFUSED)
    assert any("signs in through its own provider" in r.getMessage() for r in caplog.records)


def refresh_race(http: httpx.Client, refresh_token: str) -> list[httpx.Response]:
    """Two refreshes with one token sent at the same moment, each on its own connection."""
    start = threading.Barrier(2)
    answers: list[httpx.Response] = []

    def attempt() -> None:
        with httpx.Client(base_url=str(http.base_url), timeout=30) as own:
            own.get("/healthz")  # connected before the race starts
            start.wait()
            answers.append(
                own.post("/auth/token", data={"grant_type": "refresh_token", "refresh_token": refresh_token})
            )

    threads = [threading.Thread(target=attempt) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


def test_refresh__two_at_once_with_one_token__both_the_same_new_pair_which_keeps_working(world: World) -> None:
    body = signed_in(world.sign_in(world.people["bob"].email, "bob"))
    answers = refresh_race(world.http, body["refresh_token"])
    assert [answer.status_code for answer in answers] == [200, 200], [answer.text for answer in answers]
    first, second = (answer.json() for answer in answers)
    assert first == second  # the same refresh token and the same access token, byte for byte
    assert first["refresh_token"] != body["refresh_token"]
    assert world.me(first["access_token"]).json()["data"] == {"me": {"email": world.people["bob"].email}}
    after = signed_in(world.refresh(first["refresh_token"]))
    assert world.me(after["access_token"]).json()["data"] == {"me": {"email": world.people["bob"].email}}


def test_refresh__used_token_again_past_the_leeway__the_family_ends(
    world: World, new_datastore: DatastoreFactory, table_name: str
) -> None:
    settings = replace(world.settings, refresh_reuse_leeway_seconds=1)
    with serving(create_app(new_datastore(table_name), settings)) as http:
        body = signed_in(world.sign_in(world.people["bob"].email, "bob"))

        def refresh(token: str) -> httpx.Response:
            return http.post("/auth/token", data={"grant_type": "refresh_token", "refresh_token": token})

        rotated = signed_in(refresh(body["refresh_token"]))
        time.sleep(1.5)
        refused(refresh(body["refresh_token"]), REFRESH_REFUSED)
        refused(refresh(rotated["refresh_token"]), REFRESH_REFUSED)


SIGN_OUT = "mutation { signOut(input: {}) { ended } }"
SIGN_OUT_EVERYWHERE = "mutation E($input: SignOutEverywhereInput!) { signOutEverywhere(input: $input) { employeeId } }"


def test_sign_out__ends_the_session_its_refresh_tokens_refused(world: World) -> None:
    body = signed_in(world.sign_in(world.people["bob"].email, "bob"))
    assert world.graphql(body["access_token"], SIGN_OUT)["data"] == {"signOut": {"ended": True}}
    refused(world.refresh(body["refresh_token"]), REFRESH_REFUSED)
    # The access token already issued is not revoked: it answers until its exp (documented).
    assert world.me(body["access_token"]).json()["data"] == {"me": {"email": world.people["bob"].email}}
    assert world.graphql(body["access_token"], SIGN_OUT)["data"] == {"signOut": {"ended": False}}


def test_sign_out_everywhere__every_session_of_the_person_ends(world: World) -> None:
    one = signed_in(world.sign_in(world.people["bob"].email, "bob"))
    two = signed_in(world.sign_in(world.people["bob"].email, "bob"))
    answer = world.graphql(one["access_token"], SIGN_OUT_EVERYWHERE, {"input": {}})
    assert "errors" not in answer, answer
    for session in (one, two):
        refused(world.refresh(session["refresh_token"]), REFRESH_REFUSED)
    signed_in(world.refresh(signed_in(world.sign_in(world.people["bob"].email, "bob"))["refresh_token"]))


def test_sign_out_everywhere__admin_for_an_employee__employee_cannot_for_another(world: World) -> None:
    session = signed_in(world.sign_in(world.people["bob"].email, "bob"))
    bob_id = ids_of_employee(world.people["bob"])
    denied = world.graphql(session["access_token"], SIGN_OUT_EVERYWHERE, {"input": {"employeeId": bob_id}})
    assert denied["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    done = world.graphql(world.token(world.acme.admin), SIGN_OUT_EVERYWHERE, {"input": {"employeeId": bob_id}})
    assert done["data"]["signOutEverywhere"]["employeeId"] == bob_id
    refused(world.refresh(session["refresh_token"]), REFRESH_REFUSED)


def test_refresh__terminated_employee__refused(world: World) -> None:
    session = signed_in(world.sign_in(world.people["leaver"].email, "leaver"))
    run(employees.terminate_employee(world.acme.table, world.people["leaver"].emp_id))
    refused(world.refresh(session["refresh_token"]), REFRESH_REFUSED)


def ids_of_employee(employee: Employee) -> str:
    from graphql_api.execution import ids as global_ids

    return global_ids.encode("Employee", employee.emp_id)


# --- registration -------------------------------------------------------------------------------

PROVIDER_QUERY = "{ organization { identityProvider { issuer clientIds tokenEndpoint } } }"


def test_registration__admin_reads_it_employees_do_not(world: World) -> None:
    admin = world.graphql(world.token(world.acme.admin), PROVIDER_QUERY)
    assert admin["data"]["organization"]["identityProvider"] == {
        "issuer": world.acme_idp.issuer,
        "clientIds": [world.acme_idp.client_id],
        "tokenEndpoint": f"{world.acme_idp.issuer}/token",
    }
    employee = world.graphql(world.token(world.people["bob"]), PROVIDER_QUERY)
    assert employee["errors"][0]["extensions"]["code"] == "FORBIDDEN"


def test_registration__audit_event(world: World) -> None:
    answer = world.graphql(
        world.token(world.acme.admin), "{ organization { auditLog(first: 20) { edges { node { action } } } } }"
    )
    assert "identityProvider.register" in [
        edge["node"]["action"] for edge in answer["data"]["organization"]["auditLog"]["edges"]
    ]


@pytest.mark.parametrize(
    ("issuer", "reason"),
    [
        ("ftp://idp.example", "must be an https:// URL"),
        ("https://idp.example/?tenant=1", "no query or fragment"),
        ("http://127.0.0.1:9", "could not be reached"),
    ],
)
def test_registration__issuer_refused__bad_user_input_at_input_issuer(world: World, issuer: str, reason: str) -> None:
    answer = world.graphql(
        world.token(world.third.admin), SET_PROVIDER, {"input": {"issuer": issuer, "clientIds": ["x"]}}
    )
    [error] = answer["errors"]
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert error["extensions"]["field"] == "input.issuer"
    assert reason in error["message"]


def test_registration__another_organisations_client__conflict(world: World) -> None:
    answer = world.graphql(
        world.token(world.third.admin),
        SET_PROVIDER,
        {"input": {"issuer": world.acme_idp.issuer, "clientIds": [world.acme_idp.client_id]}},
    )
    assert answer["errors"][0]["extensions"]["code"] == "CONFLICT", answer


def test_registration__admin_naming_another_organisation__forbidden(world: World) -> None:
    answer = world.graphql(
        world.token(world.third.admin),
        SET_PROVIDER,
        {
            "input": {
                "issuer": world.acme_idp.issuer,
                "clientIds": ["x"],
                "organizationId": ids_of(world.acme.organization),
            }
        },
    )
    assert answer["errors"][0]["extensions"]["code"] == "FORBIDDEN", answer


def test_registration__platform_default_client__bad_user_input(world: World) -> None:
    answer = world.graphql(
        world.token(world.third.admin),
        SET_PROVIDER,
        {"input": {"issuer": world.platform_idp.issuer, "clientIds": [world.platform_idp.client_id]}},
    )
    assert answer["errors"][0]["extensions"]["field"] == "input.clientIds", answer


def test_remove__then_signs_in_through_the_platforms_again(
    world: World, dynamo: AsyncDynamo, table_name: str, tmp_path: Path
) -> None:
    org = _org(Table(dynamo, table_name, PlatformScope()), "Removed")
    with running_provider(tmp_path, {"rita": org.admin.email}) as own:
        token = world.token(org.admin)
        set_answer = world.graphql(token, SET_PROVIDER, {"input": {"issuer": own.issuer, "clientIds": ["hr-web"]}})
        assert "errors" not in set_answer, set_answer
        session = signed_in(world.sign_in(org.admin.email, "rita"))
        removed = world.graphql(token, "mutation { removeIdentityProvider(input: {}) { identityProvider { issuer } } }")
        assert removed["data"]["removeIdentityProvider"]["identityProvider"]["issuer"] == own.issuer
        # The session begun through it ends: its refresh token is refused from now on. Its
        # access token, already issued, works until it expires (docs/api/signing-in.md).
        refused(world.refresh(session["refresh_token"]), REFRESH_REFUSED)
        assert world.me(session["access_token"]).json()["data"] == {"me": {"email": org.admin.email}}
        # Its ID tokens sign nobody in any more (the platform's provider does not know its key);
        # discovery sends the domain to the platform's provider.
        flow = CodeFlow(f"{own.issuer}/auth", f"{own.issuer}/token", "hr-web", [])
        after = world.exchange(flow.sign_in("rita"))
        assert after.status_code == 400 and after.json()["error"] == "invalid_grant"
        assert after.json()["error_description"].startswith("the ID token is not valid")
        assert world.discover(org.admin.email).json()["issuer"] == world.platform_idp.issuer


CREATE_KEY = "mutation($input: CreateApiKeyInput!) { createApiKey(input: $input) { secret apiKey { id } } }"
REVOKE_KEY = "mutation($input: RevokeApiKeyInput!) { revokeApiKey(input: $input) { apiKey { status } } }"
AUDIT_ACTIONS = "{ organization { auditLog(first: 50) { edges { node { action } } } } }"


def test_registration__admin_api_key__forbidden_and_nothing_written(world: World, tmp_path: Path) -> None:
    org = world.third
    admin = world.token(org.admin)
    created = world.graphql(admin, CREATE_KEY, {"input": {"name": "HRIS", "role": "ADMIN"}})["data"]["createApiKey"]
    before = world.graphql(admin, AUDIT_ACTIONS)["data"]
    with running_provider(tmp_path, {"eve": org.admin.email}) as rogue:
        answer = world.graphql(
            created["secret"], SET_PROVIDER, {"input": {"issuer": rogue.issuer, "clientIds": ["hr-web"]}}
        )
        assert answer["data"] is None or answer["data"]["setIdentityProvider"] is None, answer
        [error] = answer["errors"]
        assert error["extensions"]["code"] == "FORBIDDEN"
        assert error["message"] == API_KEY_REFUSED
        # Nothing registered: the rogue provider's ID token signs nobody in.
        flow = CodeFlow(f"{rogue.issuer}/auth", f"{rogue.issuer}/token", "hr-web", [])
        after = world.exchange(flow.sign_in("eve"))
        assert after.status_code == 400 and after.json()["error_description"].startswith("the ID token is not valid")
    assert world.graphql(admin, PROVIDER_QUERY)["data"]["organization"]["identityProvider"] is None
    assert world.graphql(admin, AUDIT_ACTIONS)["data"] == before


def test_revoke_api_key__that_registered_the_provider__sessions_begun_through_it_end(
    world: World, dynamo: AsyncDynamo, table_name: str, tmp_path: Path
) -> None:
    """A provider an ADMIN key registered before keys were refused that write (written here as
    it was then, by the datastore in the key's name): revoking the key ends the sessions its
    provider began, and only those."""
    org = _org(Table(dynamo, table_name, PlatformScope()), "Leaky")
    admin = world.token(org.admin)
    created = world.graphql(admin, CREATE_KEY, {"input": {"name": "HRIS", "role": "ADMIN"}})["data"]["createApiKey"]
    key_id = global_ids.decode(created["apiKey"]["id"]).parts[0]
    with running_provider(tmp_path, {"eve": org.admin.email}) as rogue:
        as_key = org.table.with_scope(TenantScope(org.organization.org_id, key_id))
        run(
            identity_providers.set_identity_provider(
                as_key,
                org.organization.org_id,
                issuer_url=rogue.issuer,
                client_id_list=[rogue.client_id],
                authorization_endpoint=f"{rogue.issuer}/auth",
                token_endpoint=f"{rogue.issuer}/token",
            )
        )
        session = signed_in(world.sign_in(org.admin.email, "eve"))
        assert world.me(session["access_token"]).json()["data"] == {"me": {"email": org.admin.email}}
        rotated = signed_in(world.refresh(session["refresh_token"]))

        revoked = world.graphql(admin, REVOKE_KEY, {"input": {"id": created["apiKey"]["id"]}})
        assert revoked["data"] == {"revokeApiKey": {"apiKey": {"status": "REVOKED"}}}, revoked

        refused(world.refresh(rotated["refresh_token"]), REFRESH_REFUSED)


def test_discovery__customer_domain_and_unknown_domain__the_same_reads(world: World, call_log: CallLog) -> None:
    """Their timing told them apart: a customer's domain read its provider record too."""

    def reads(email: str) -> list[tuple[str, bool]]:
        before = len(call_log.snapshot())
        assert world.discover(email).status_code == 200
        return [(call.operation, bool(call.params.get("ConsistentRead"))) for call in call_log.snapshot()[before:]]

    customer = reads(f"tess@{world.third.domain}")
    unknown = reads(f"someone@{unique_domain()}")
    assert customer == unknown == [("GetItem", False), ("GetItem", False)]
