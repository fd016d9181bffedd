"""POST /auth/token over HTTP: ID tokens from a stand-in IdP exchanged for API access tokens."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import jwt
import pytest

from datastore.aws import calls
from datastore.kinds import layout
from datastore.kinds.entities import Role
from datastore.tenancy import keys
from datastore.tenants import employees
from graphql_api.app import create_app
from graphql_api.auth.signin import ACCESS_TOKEN_TYPE, GRANT_TYPE, ID_TOKEN_TYPE, NO_PROVIDER, REFUSED
from graphql_api.settings.api import ApiSettings
from tests.blocking import run
from tests.conftest import DatastoreFactory, Tenant, TenantFactory
from tests.graphql_api import idp
from tests.graphql_api.fixtures import TEST_SECRET
from tests.graphql_api.live import serving

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

TTL = 600


def sso_settings(jwks: str) -> ApiSettings:
    return ApiSettings.from_env(
        {
            "HR_ENV": "test",
            "ALLOWED_HOSTS": "127.0.0.1",
            "JWT_SECRET": TEST_SECRET,
            "OIDC_ISSUER": idp.ISSUER,
            "OIDC_AUDIENCE": f"{idp.CLIENT_ID}, {idp.OTHER_CLIENT_ID}",
            "OIDC_JWKS": jwks,
            "ACCESS_TOKEN_TTL_SECONDS": str(TTL),
        }
    )


@pytest.fixture(scope="module")
def jwks_server() -> Iterator[idp.JwksServer]:
    with idp.serving_jwks(idp.RSA, idp.EC) as server:
        yield server


@pytest.fixture(scope="module")
def sso(new_datastore: DatastoreFactory, table_name: str, jwks_server: idp.JwksServer) -> Iterator[httpx.Client]:
    """A server configured for sign-in by SSO against the JWKS served over HTTP."""
    with serving(create_app(new_datastore(table_name), sso_settings(jwks_server.url))) as http:
        yield http


@pytest.fixture(scope="module")
def sso_file(
    new_datastore: DatastoreFactory, table_name: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[httpx.Client]:
    """A server configured for sign-in by SSO against a JWKS file."""
    path = idp.write_jwks(tmp_path_factory.mktemp("idp") / "jwks.json", idp.RSA, idp.EC)
    with serving(create_app(new_datastore(table_name), sso_settings(str(path)))) as http:
        yield http


def exchange(http: httpx.Client, subject_token: str | None, **overrides: str | None) -> httpx.Response:
    form = {
        "grant_type": GRANT_TYPE,
        "subject_token": subject_token,
        "subject_token_type": ID_TOKEN_TYPE,
        **overrides,
    }
    return http.post("/auth/token", data={name: value for name, value in form.items() if value is not None})


def me(http: httpx.Client, access_token: str) -> dict[str, Any]:
    response = http.post(
        "/graphql",
        json={"query": "{ me { email role } }"},
        headers={"Authorization": f"Bearer {access_token}"},
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert "errors" not in body, body
    result: dict[str, Any] = body["data"]["me"]
    return result


def assert_error(response: httpx.Response, error: str) -> str:
    assert response.status_code == 400, response.text
    assert response.headers["cache-control"] == "no-store"
    body = response.json()
    assert set(body) == {"error", "error_description"}
    assert body["error"] == error, body
    description: str = body["error_description"]
    return description


# --- success -----------------------------------------------------------------------------


@pytest.mark.parametrize("key", [idp.RSA, idp.EC], ids=["RS256", "ES256"])
def test_exchange__id_token_against_http_jwks__access_token_works_on_graphql(
    sso: httpx.Client, tenant: Tenant, key: idp.Key
) -> None:
    response = exchange(sso, idp.id_token(tenant.admin.email, key))
    assert response.status_code == 200, response.text
    assert response.headers["cache-control"] == "no-store"
    body = response.json()
    assert set(body) == {"access_token", "issued_token_type", "token_type", "expires_in", "refresh_token"}
    assert body["refresh_token"].startswith("hrr_")
    assert body["issued_token_type"] == ACCESS_TOKEN_TYPE
    assert body["token_type"] == "Bearer"
    assert body["expires_in"] == TTL
    assert me(sso, body["access_token"]) == {"email": tenant.admin.email, "role": "ADMIN"}


@pytest.mark.parametrize("key", [idp.RSA, idp.EC], ids=["RS256", "ES256"])
def test_exchange__id_token_against_jwks_file__access_token_works_on_graphql(
    sso_file: httpx.Client, tenant: Tenant, key: idp.Key
) -> None:
    response = exchange(sso_file, idp.id_token(tenant.admin.email, key))
    assert response.status_code == 200, response.text
    assert me(sso_file, response.json()["access_token"])["email"] == tenant.admin.email


def test_exchange__access_token__lives_access_token_ttl(sso: httpx.Client, tenant: Tenant) -> None:
    access_token = exchange(sso, idp.id_token(tenant.admin.email)).json()["access_token"]
    claims = jwt.decode(access_token, TEST_SECRET, algorithms=["HS256"])
    assert claims["exp"] - claims["iat"] == TTL
    assert (claims["sub"], claims["org"]) == (tenant.admin.emp_id, tenant.org_id)


def test_exchange__email_in_other_case__same_person(sso: httpx.Client, tenant: Tenant) -> None:
    response = exchange(sso, idp.id_token(tenant.admin.email.upper()))
    assert response.status_code == 200, response.text


def test_exchange__second_configured_client_id__accepted(sso: httpx.Client, tenant: Tenant) -> None:
    token = idp.id_token(tenant.admin.email, aud=[idp.OTHER_CLIENT_ID, "someone-else"], azp=idp.OTHER_CLIENT_ID)
    assert exchange(sso, token).status_code == 200


def test_exchange__two_audiences_azp_ours__accepted_single_audience_needs_none(
    sso: httpx.Client, tenant: Tenant
) -> None:
    email = tenant.admin.email
    assert exchange(sso, idp.id_token(email, aud=[idp.CLIENT_ID, "another-app"], azp=idp.CLIENT_ID)).status_code == 200
    assert exchange(sso, idp.id_token(email, aud=[idp.CLIENT_ID])).status_code == 200
    assert exchange(sso, idp.id_token(email, aud=idp.CLIENT_ID)).status_code == 200


def test_exchange__two_audiences_without_azp__invalid_grant_and_the_reason_logged(
    sso: httpx.Client, tenant: Tenant, caplog: pytest.LogCaptureFixture
) -> None:
    token = idp.id_token(tenant.admin.email, aud=[idp.CLIENT_ID, idp.OTHER_CLIENT_ID])
    with caplog.at_level(logging.INFO, logger="hr.signin"):
        response = exchange(sso, token)
    reason = "the ID token is not valid: it has several audiences and no azp"
    assert assert_error(response, "invalid_grant") == reason
    assert [r.getMessage() for r in caplog.records if r.name == "hr.signin"] == [f"sign-in refused: {reason}"]


def test_exchange__idp_claims_another_role__role_from_employee_record(sso: httpx.Client, tenant: Tenant) -> None:
    manager = tenant.employee(role=Role.MANAGER)
    token = idp.id_token(manager.email, role="admin", roles=["admin"], groups=["hr-admins"], org="someone-else")
    access_token = exchange(sso, token).json()["access_token"]
    assert jwt.decode(access_token, TEST_SECRET, algorithms=["HS256"])["role"] == "manager"
    assert me(sso, access_token) == {"email": manager.email, "role": "MANAGER"}


def test_exchange__calls__identity_getitem_one_batch_then_the_session_transaction(
    sso: httpx.Client, tenant: Tenant
) -> None:
    with calls.listening() as log:
        response = exchange(sso, idp.id_token(tenant.admin.email))
    assert response.status_code == 200
    made = log.snapshot()
    assert [call.operation for call in made] == ["GetItem", "BatchGetItem", "TransactWriteItems"]
    assert made[0].partition_keys() == [layout.IDENTITY.key_at(tenant.admin.email).pk]
    # The organisation, the employee and the organisation's own provider (it has none).
    assert set(made[1].partition_keys()) == {keys.org_pk(tenant.org_id)}
    (requested,) = made[1].params["RequestItems"].values()
    assert len(requested["Keys"]) == 3
    session_pk = layout.SESSION.partition(tenant.org_id, tenant.admin.emp_id)
    assert session_pk in made[2].partition_keys()


# --- the ID token is not valid -------------------------------------------------------------

TOKEN_FAULTS: dict[str, Any] = {
    "wrong issuer": lambda email: idp.id_token(email, iss="https://evil.example.test"),
    "wrong audience": lambda email: idp.id_token(email, aud="another-app"),
    "azp another client": lambda email: idp.id_token(email, azp="another-app"),
    "two audiences, no azp": lambda email: idp.id_token(email, aud=[idp.CLIENT_ID, "another-app"]),
    "two audiences, azp the other": lambda email: idp.id_token(
        email, aud=[idp.CLIENT_ID, "another-app"], azp="another-app"
    ),
    "expired": lambda email: idp.id_token(email, iat=1_000_000_000, nbf=1_000_000_000, exp=1_000_000_300),
    "nbf in the future": lambda email: idp.id_token(email, nbf=4_000_000_000, exp=4_000_000_300),
    "iat in the future": lambda email: idp.id_token(email, iat=4_000_000_000, exp=4_000_000_300),
    "exp a string": lambda email: idp.id_token(email, exp="4000000000"),
    "iat a string": lambda email: idp.id_token(email, iat=str(idp.claims(email)["iat"])),
    "nbf a string": lambda email: idp.id_token(email, nbf=str(idp.claims(email)["nbf"])),
    "no exp": lambda email: idp.id_token(email, exp=None),
    "no iat": lambda email: idp.id_token(email, iat=None),
    "signed by another key": lambda email: idp.id_token(email, idp.STRANGER),
    "unknown kid": lambda email: idp.id_token(email, idp.ROTATED),
    "HS256 with the API secret": lambda email: jwt.encode(
        idp.claims(email), TEST_SECRET, algorithm="HS256", headers={"kid": idp.RSA.kid}
    ),
    "alg none": lambda email: jwt.encode(idp.claims(email), "", algorithm="none", headers={"kid": idp.RSA.kid}),
    "EC key with an RS256 header": lambda email: _relabelled(email),
    "not a JWT": lambda email: "not-a-jwt",
}


def _relabelled(email: str) -> str:
    """A token whose header names the EC key but claims RS256 (signed with the RSA key)."""
    return jwt.encode(idp.claims(email), idp.RSA.private, algorithm="RS256", headers={"kid": idp.EC.kid})


@pytest.mark.parametrize("fault", list(TOKEN_FAULTS))
def test_exchange__invalid_id_token__invalid_grant(sso: httpx.Client, tenant: Tenant, fault: str) -> None:
    response = exchange(sso, TOKEN_FAULTS[fault](tenant.admin.email))
    description = assert_error(response, "invalid_grant")
    assert description.startswith("the ID token is not valid"), description


def test_exchange__no_email_claim__says_so(sso: httpx.Client, tenant: Tenant) -> None:
    response = exchange(sso, idp.id_token(tenant.admin.email, email=None))
    description = assert_error(response, "invalid_grant")
    assert description == "the ID token has no email claim: ask the identity provider for the email scope"


# --- the account may not sign in: one answer for every reason ----------------------------


def test_exchange__account_reasons__byte_identical_invalid_grant_and_logged(
    sso: httpx.Client, make_tenant: TenantFactory, caplog: pytest.LogCaptureFixture, client: DynamoDBClient
) -> None:
    active, suspended = make_tenant(), make_tenant()
    client.update_item(
        TableName=suspended.table.name,
        Key=layout.ORGANIZATION.key_at(suspended.org_id).wire(),
        UpdateExpression="SET #s = :s",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={":s": {"S": "suspended"}},
    )
    leaver = active.employee()
    run(employees.terminate_employee(active.table, leaver.emp_id))
    tokens = {
        "no account": idp.id_token(f"nobody-{active.org_id.lower()}@example.com"),
        "not verified": idp.id_token(active.admin.email, email_verified=False),
        "verified as a string": idp.id_token(active.admin.email, email_verified="true"),
        "no email_verified": idp.id_token(active.admin.email, email_verified=None),
        "suspended organisation": idp.id_token(suspended.admin.email),
        "inactive employee": idp.id_token(leaver.email),
    }
    bodies = {}
    for reason, token in tokens.items():
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="hr.signin"):
            response = exchange(sso, token)
        assert assert_error(response, "invalid_grant") == REFUSED
        bodies[reason] = response.content
        logged = [record for record in caplog.records if record.name == "hr.signin"]
        assert len(logged) == 1, (reason, [r.getMessage() for r in logged])
        assert logged[0].exc_info is None
        assert "refused" in logged[0].getMessage()
    assert len(set(bodies.values())) == 1, bodies
    assert exchange(sso, idp.id_token(active.admin.email)).status_code == 200  # the control


@pytest.mark.parametrize(
    ("local", "reason"),
    [
        ("a" * 65, "must have at most 64 bytes before the @ (RFC 5321), not 65"),
        ("ali\u00adce", "must not contain invisible characters (U+00AD SOFT HYPHEN)"),
    ],
    ids=["local-part-of-65", "soft-hyphen"],
)
def test_exchange__email_the_api_would_refuse__same_answer_as_no_account_and_logged(
    sso: httpx.Client, tenant: Tenant, caplog: pytest.LogCaptureFixture, local: str, reason: str
) -> None:
    email = tenant.email(local)
    with caplog.at_level(logging.INFO, logger="hr.signin"):
        response = exchange(sso, idp.id_token(email))
    assert assert_error(response, "invalid_grant") == REFUSED
    assert [r.getMessage() for r in caplog.records if r.name == "hr.signin"] == [
        f"sign-in refused: the email {email!r} is not a valid address: it {reason}"
    ]


def test_exchange__refusal_log__names_the_real_reason(
    sso: httpx.Client, tenant: Tenant, caplog: pytest.LogCaptureFixture
) -> None:
    leaver = tenant.employee()
    run(employees.terminate_employee(tenant.table, leaver.emp_id))
    with caplog.at_level(logging.INFO, logger="hr.signin"):
        exchange(sso, idp.id_token(leaver.email))
    assert [r.getMessage() for r in caplog.records if r.name == "hr.signin"] == [
        f"sign-in refused: the employee {leaver.emp_id} ({leaver.email!r}) is not active"
    ]


# --- the request is not a token exchange we serve ------------------------------------------


def test_exchange__other_grant_type__unsupported_grant_type(sso: httpx.Client, tenant: Tenant) -> None:
    response = exchange(sso, idp.id_token(tenant.admin.email), grant_type="password")
    assert_error(response, "unsupported_grant_type")


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({"grant_type": None}, "grant_type"),
        ({"subject_token": None}, "subject_token"),
        ({"subject_token": ""}, "subject_token"),
        ({"subject_token_type": None}, "subject_token_type"),
        ({"subject_token_type": ACCESS_TOKEN_TYPE}, "subject_token_type"),
        ({"requested_token_type": "urn:ietf:params:oauth:token-type:refresh_token"}, "requested_token_type"),
        ({"actor_token": "x", "actor_token_type": ID_TOKEN_TYPE}, "actor_token"),
    ],
)
def test_exchange__bad_parameter__invalid_request(
    sso: httpx.Client, tenant: Tenant, overrides: dict[str, str | None], named: str
) -> None:
    token = idp.id_token(tenant.admin.email)
    form = {"subject_token": token, **overrides}
    response = exchange(sso, form.pop("subject_token"), **form)
    assert named in assert_error(response, "invalid_request")


def test_exchange__repeated_parameter__invalid_request(sso: httpx.Client, tenant: Tenant) -> None:
    token = idp.id_token(tenant.admin.email)
    content = f"grant_type={GRANT_TYPE}&subject_token={token}&subject_token={token}&subject_token_type={ID_TOKEN_TYPE}"
    response = sso.post("/auth/token", content=content, headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert "subject_token is repeated" in assert_error(response, "invalid_request")


def test_exchange__json_body__invalid_request(sso: httpx.Client, tenant: Tenant) -> None:
    body = {"grant_type": GRANT_TYPE, "subject_token": idp.id_token(tenant.admin.email)}
    response = sso.post("/auth/token", json={**body, "subject_token_type": ID_TOKEN_TYPE})
    assert "x-www-form-urlencoded" in assert_error(response, "invalid_request")


def test_exchange__not_utf8__invalid_request(sso: httpx.Client) -> None:
    response = sso.post(
        "/auth/token", content=b"grant_type=\xff\xfe", headers={"Content-Type": "application/x-www-form-urlencoded"}
    )
    assert_error(response, "invalid_request")


def test_exchange__no_platform_provider_and_issuer_not_registered__invalid_grant(
    http: httpx.Client, tenant: Tenant
) -> None:
    response = exchange(http, idp.id_token(tenant.admin.email))
    assert assert_error(response, "invalid_grant") == NO_PROVIDER


# --- key rotation ------------------------------------------------------------------------


def test_exchange__unknown_kids__jwks_refetch_throttled(
    new_datastore: DatastoreFactory, table_name: str, tenant: Tenant, tmp_path: Path
) -> None:
    with idp.serving_jwks(idp.RSA) as jwks_server:
        app = create_app(new_datastore(table_name), sso_settings(jwks_server.url))
        with serving(app) as http:
            assert exchange(http, idp.id_token(tenant.admin.email)).status_code == 200
            assert jwks_server.fetches == 1
            jwks_server.keys = (idp.RSA, idp.ROTATED)
            # Within 30 s of the last fetch: the new kid is not fetched, however often it is sent.
            for _ in range(5):
                assert_error(exchange(http, idp.id_token(tenant.admin.email, idp.ROTATED)), "invalid_grant")
            assert exchange(http, idp.id_token(tenant.admin.email)).status_code == 200
            assert jwks_server.fetches == 1
