"""Bearer tokens: HS256 with the secret, RS256/ES256 against a JWKS; every bad token is 401."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from datastore.values.ids import new_id
from graphql_api.app import create_app
from graphql_api.auth.jwks import JwksKeys, signing_key
from graphql_api.auth.token_errors import TokenRefused
from graphql_api.auth.tokens import TokenVerifier
from graphql_api.execution.errors import ApiError
from graphql_api.settings.api import ApiSettings
from tests.conftest import DatastoreFactory, Tenant
from tests.graphql_api.fixtures import TEST_SECRET
from tests.graphql_api.live import serving

ISSUER = "https://idp.example.test"
AUDIENCE = "hr-api"
RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
EC_KEY = ec.generate_private_key(ec.SECP256R1())
STRANGER_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)


def jwk(key: Any, kid: str, alg: str) -> dict[str, Any]:
    algorithm = RSAAlgorithm if alg == "RS256" else ECAlgorithm
    public: dict[str, Any] = json.loads(algorithm.to_jwk(key.public_key()))
    return {**public, "kid": kid, "alg": alg, "use": "sig"}


@pytest.fixture
def jwks_file(tmp_path: Path) -> Path:
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps({"keys": [jwk(RSA_KEY, "rsa-1", "RS256"), jwk(EC_KEY, "ec-1", "ES256")]}))
    return path


@pytest.fixture
def jwks_settings(jwks_file: Path) -> ApiSettings:
    return ApiSettings.from_env(
        {
            "HR_ENV": "test",
            "ALLOWED_HOSTS": "127.0.0.1",
            "JWT_SECRET": TEST_SECRET,
            "JWKS": str(jwks_file),
            "JWT_ISSUER": ISSUER,
            "JWT_AUDIENCE": AUDIENCE,
        }
    )


@pytest.fixture
def http(new_datastore: DatastoreFactory, table_name: str, jwks_settings: ApiSettings) -> Iterator[httpx.Client]:
    with serving(create_app(new_datastore(table_name), jwks_settings)) as session:
        yield session


def claims_of(tenant: Tenant, **overrides: Any) -> dict[str, Any]:
    now = int(time.time())
    claims = {
        "sub": tenant.admin.emp_id,
        "org": tenant.org_id,
        "role": "admin",
        "iss": ISSUER,
        "aud": AUDIENCE,
        "iat": now,
        "nbf": now,
        "exp": now + 300,
    }
    return {**claims, **overrides}


def post(http: httpx.Client, token: str) -> tuple[int, dict[str, Any]]:
    response = http.post("/graphql", json={"query": "{ me { email } }"}, headers={"Authorization": f"Bearer {token}"})
    body: dict[str, Any] = response.json()
    return response.status_code, body


def assert_unauthenticated(
    http: httpx.Client, token: str, message: str | None = None, reason: str = "TOKEN_INVALID"
) -> None:
    """401, UNAUTHENTICATED with ``reason``, and ``message`` (our words, never PyJWT's) if given."""
    status, body = post(http, token)
    assert status == 401
    assert [e["extensions"] for e in body["errors"]] == [{"code": "UNAUTHENTICATED", "reason": reason}]
    if message is not None:
        assert body["errors"][0]["message"] == message


def test_hs256__with_the_secret__accepted(http: httpx.Client, tenant: Tenant) -> None:
    status, body = post(http, jwt.encode(claims_of(tenant), TEST_SECRET, algorithm="HS256"))
    assert status == 200
    assert body["data"] == {"me": {"email": tenant.admin.email}}


@pytest.mark.parametrize(("key", "kid", "alg"), [(RSA_KEY, "rsa-1", "RS256"), (EC_KEY, "ec-1", "ES256")])
def test_jwks__signed_by_a_listed_key__accepted(
    http: httpx.Client, tenant: Tenant, key: Any, kid: str, alg: str
) -> None:
    status, body = post(http, jwt.encode(claims_of(tenant), key, algorithm=alg, headers={"kid": kid}))
    assert status == 200, body
    assert body["data"] == {"me": {"email": tenant.admin.email}}


def expired(tenant: Tenant, **overrides: Any) -> dict[str, Any]:
    past = int(time.time()) - 600
    return claims_of(tenant, iat=past, nbf=past, exp=past + 60, **overrides)


def test_expired__unauthenticated_token_expired(http: httpx.Client, tenant: Tenant) -> None:
    token = jwt.encode(expired(tenant), TEST_SECRET, algorithm="HS256")
    assert_unauthenticated(http, token, "the token has expired: get a new one", reason="TOKEN_EXPIRED")


def test_expired__jwks_signed__token_expired(http: httpx.Client, tenant: Tenant) -> None:
    token = jwt.encode(expired(tenant), RSA_KEY, algorithm="RS256", headers={"kid": "rsa-1"})
    assert_unauthenticated(http, token, "the token has expired: get a new one", reason="TOKEN_EXPIRED")


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        ({"iss": "https://evil.test"}, "invalid token: it was issued by another issuer (iss)"),
        ({"aud": "other-api"}, "invalid token: it is addressed to another audience (aud)"),
        ({"role": "owner"}, "invalid token: its role 'owner' is not a role"),
        ({"org": None}, "invalid token: it has no org claim"),
    ],
)
def test_expired_and_otherwise_invalid__token_invalid(
    http: httpx.Client, tenant: Tenant, fault: dict[str, Any], message: str
) -> None:
    """Only a token that is ours in every other respect is TOKEN_EXPIRED: a refresh cannot mend the rest."""
    claims = {name: value for name, value in expired(tenant, **fault).items() if value is not None}
    assert_unauthenticated(http, jwt.encode(claims, TEST_SECRET, algorithm="HS256"), message)


def test_expired_with_a_forged_signature__token_invalid(http: httpx.Client, tenant: Tenant) -> None:
    token = jwt.encode(expired(tenant), "another-secret-" * 4, algorithm="HS256")
    assert_unauthenticated(http, token, "invalid token: its signature does not verify")


def test_not_yet_valid__unauthenticated(http: httpx.Client, tenant: Tenant) -> None:
    future = int(time.time()) + 600
    token = jwt.encode(claims_of(tenant, nbf=future, exp=future + 60), TEST_SECRET, algorithm="HS256")
    assert_unauthenticated(http, token, "invalid token: it is not valid yet (nbf or iat is in the future)")


def test_wrong_signature__unauthenticated(http: httpx.Client, tenant: Tenant) -> None:
    token = jwt.encode(claims_of(tenant), "another-secret-" * 4, algorithm="HS256")
    assert_unauthenticated(http, token, "invalid token: its signature does not verify")


def test_missing_claim__says_which(http: httpx.Client, tenant: Tenant) -> None:
    claims = {name: value for name, value in claims_of(tenant).items() if name != "exp"}
    assert_unauthenticated(
        http, jwt.encode(claims, TEST_SECRET, algorithm="HS256"), "invalid token: it has no exp claim"
    )


def test_wrong_signature__jwks_kid_but_another_key__unauthenticated(http: httpx.Client, tenant: Tenant) -> None:
    assert_unauthenticated(
        http, jwt.encode(claims_of(tenant), STRANGER_KEY, algorithm="RS256", headers={"kid": "rsa-1"})
    )


def test_wrong_audience__unauthenticated(http: httpx.Client, tenant: Tenant) -> None:
    token = jwt.encode(claims_of(tenant, aud="other-api"), TEST_SECRET, algorithm="HS256")
    assert_unauthenticated(http, token, "invalid token: it is addressed to another audience (aud)")


def test_wrong_issuer__unauthenticated(http: httpx.Client, tenant: Tenant) -> None:
    token = jwt.encode(claims_of(tenant, iss="https://evil.test"), TEST_SECRET, algorithm="HS256")
    assert_unauthenticated(http, token, "invalid token: it was issued by another issuer (iss)")


def test_alg_none__unauthenticated(http: httpx.Client, tenant: Tenant) -> None:
    token = jwt.encode(claims_of(tenant), None, algorithm="none")
    assert_unauthenticated(http, token, "invalid token: its algorithm 'none' is not accepted")


def test_unknown_kid__unauthenticated(http: httpx.Client, tenant: Tenant) -> None:
    token = jwt.encode(claims_of(tenant), STRANGER_KEY, algorithm="RS256", headers={"kid": "unknown"})
    assert_unauthenticated(http, token, "invalid token: its signing key 'unknown' is unknown")


def test_rs256_header_with_the_secret__unauthenticated(http: httpx.Client, tenant: Tenant) -> None:
    """Algorithm confusion: an HMAC over the public key must not pass as RS256."""
    token = jwt.encode(claims_of(tenant), TEST_SECRET, algorithm="HS256")
    _header, payload, signature = token.split(".")
    forged_header = base64.urlsafe_b64encode(b'{"alg":"RS256","kid":"rsa-1","typ":"JWT"}').rstrip(b"=").decode()
    assert_unauthenticated(http, f"{forged_header}.{payload}.{signature}")


def test_tampered_claims__unauthenticated(http: httpx.Client, tenant: Tenant, make_tenant: Any) -> None:
    other = make_tenant()
    token = jwt.encode(claims_of(tenant), RSA_KEY, algorithm="RS256", headers={"kid": "rsa-1"})
    header, payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims["org"] = other.org_id
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    assert_unauthenticated(http, f"{header}.{forged}.{signature}")


def test_malformed_header__unauthenticated(http: httpx.Client) -> None:
    response = http.post("/graphql", json={"query": "{ me { email } }"}, headers={"Authorization": "Token abc"})
    assert response.status_code == 401


def test_jwks__new_kid__refetched(tmp_path: Path, tenant: Tenant) -> None:
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps({"keys": [jwk(RSA_KEY, "rsa-1", "RS256")]}))
    settings = ApiSettings.from_env(
        {"HR_ENV": "test", "JWT_SECRET": TEST_SECRET, "JWT_ISSUER": ISSUER, "JWT_AUDIENCE": AUDIENCE}
    )
    keys = JwksKeys(str(path), min_refresh_seconds=0)
    verifier = TokenVerifier(settings, keys)
    assert verifier.verify(jwt.encode(claims_of(tenant), RSA_KEY, algorithm="RS256", headers={"kid": "rsa-1"}))
    rotated = jwt.encode(claims_of(tenant), EC_KEY, algorithm="ES256", headers={"kid": "ec-2"})
    path.write_text(json.dumps({"keys": [jwk(EC_KEY, "ec-2", "ES256")]}))
    assert verifier.verify(rotated).org_id == tenant.org_id


def test_jwks__unknown_kid__refetch_throttled(tmp_path: Path) -> None:
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps({"keys": [jwk(RSA_KEY, "rsa-1", "RS256")]}))
    keys = JwksKeys(str(path), min_refresh_seconds=3600)
    signing_key(keys, {"alg": "RS256", "kid": "rsa-1"})
    path.unlink()  # a refetch now would fail loudly; a throttled one is not attempted
    with pytest.raises(TokenRefused, match="its signing key 'nope' is unknown"):
        signing_key(keys, {"alg": "RS256", "kid": "nope"})


def test_jwks_file_not_json__unauthenticated_not_crashed(tmp_path: Path, tenant: Tenant) -> None:
    path = tmp_path / "jwks.json"
    path.write_text("{not json")
    settings = ApiSettings.from_env({"HR_ENV": "test", "JWT_SECRET": TEST_SECRET, "JWKS": str(path)})
    token = jwt.encode(claims_of(tenant), RSA_KEY, algorithm="RS256", headers={"kid": "rsa-1"})
    with pytest.raises(ApiError, match="signing keys are unavailable") as refused:
        TokenVerifier(settings).verify(token)
    assert refused.value.extensions["code"] == "UNAUTHENTICATED"


# --- time claims are numbers (RFC 7519 NumericDate) ----------------------------------------


@pytest.mark.parametrize("claim", ["exp", "iat", "nbf"])
def test_time_claim_as_a_string__unauthenticated(http: httpx.Client, tenant: Tenant, claim: str) -> None:
    # PyJWT alone accepts a numeric string here: the verifier checks the claim's type.
    valid = claims_of(tenant)[claim]
    assert_unauthenticated(http, jwt.encode(claims_of(tenant, **{claim: str(valid)}), TEST_SECRET, algorithm="HS256"))


@pytest.mark.parametrize("value", [True, None, [1]])
def test_exp_not_a_number__unauthenticated(http: httpx.Client, tenant: Tenant, value: object) -> None:
    assert_unauthenticated(http, jwt.encode(claims_of(tenant, exp=value), TEST_SECRET, algorithm="HS256"))


@pytest.mark.parametrize("claim", ["sub", "org"])
def test_lower_case_ids_in_claims__unauthenticated(http: httpx.Client, tenant: Tenant, claim: str) -> None:
    canonical = claims_of(tenant)[claim]
    token = jwt.encode(claims_of(tenant, **{claim: canonical.lower()}), TEST_SECRET, algorithm="HS256")
    assert_unauthenticated(http, token)


def test_fractional_time_claims__accepted(http: httpx.Client, tenant: Tenant) -> None:
    now = time.time()
    token = jwt.encode(claims_of(tenant, iat=now, nbf=now - 1.5, exp=now + 300.25), TEST_SECRET, algorithm="HS256")
    status, body = post(http, token)
    assert status == 200, body
    assert body["data"] == {"me": {"email": tenant.admin.email}}


# --- verified HS256 tokens are remembered until their expiry -----------------------------------


def ours(settings: ApiSettings, **overrides: Any) -> str:
    now = int(time.time())
    claims = {"sub": new_id(), "org": new_id(), "role": "admin", "iss": ISSUER, "aud": AUDIENCE}
    return jwt.encode({**claims, "iat": now, "nbf": now, "exp": now + 300, **overrides}, TEST_SECRET, algorithm="HS256")


def refusal(verifier: TokenVerifier, token: str) -> str:
    with pytest.raises(ApiError) as refused:
        verifier.verify(token)
    return str(refused.value.extensions["reason"])


def test_hs256__verified_again__answered_from_the_verified_tokens(jwks_settings: ApiSettings) -> None:
    verifier = TokenVerifier(jwks_settings)
    token = ours(jwks_settings)
    first = verifier.verify(token)
    assert verifier.verify(token) is first
    assert token in verifier.verified


def test_remembered_token__past_its_exp__token_expired(jwks_settings: ApiSettings) -> None:
    """Expired by PyJWT's reading of ``exp`` (its integer part), remembered or not."""
    verifier = TokenVerifier(jwks_settings)
    whole = int(time.time()) + 1
    token = ours(jwks_settings, exp=whole + 0.9)
    assert verifier.verify(token).expires_at == whole + 0.9
    time.sleep(max(0.0, whole - time.time()) + 0.05)
    assert refusal(verifier, token) == "TOKEN_EXPIRED"
    assert refusal(TokenVerifier(jwks_settings), token) == "TOKEN_EXPIRED"  # as a fresh verifier says


def test_remembered_token__respelt_signature__token_invalid(jwks_settings: ApiSettings) -> None:
    verifier = TokenVerifier(jwks_settings)
    token = ours(jwks_settings)
    verifier.verify(token)
    header, claims, signature = token.split(".")
    forged = signature[:-2] + ("AA" if not signature.endswith("AA") else "BB")
    assert refusal(verifier, f"{header}.{claims}.{forged}") == "TOKEN_INVALID"


def test_jwks_token__not_remembered(jwks_settings: ApiSettings) -> None:
    """A JWKS token is verified on the I/O pool, against keys that rotate: every time in full."""
    verifier = TokenVerifier(jwks_settings)
    claims = {"sub": new_id(), "org": new_id(), "role": "admin", "iss": ISSUER, "aud": AUDIENCE}
    token = jwt.encode({**claims, "exp": int(time.time()) + 300}, RSA_KEY, algorithm="RS256", headers={"kid": "rsa-1"})
    assert verifier.verify(token) == verifier.verify(token)
    assert len(verifier.verified) == 0
