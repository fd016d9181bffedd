"""ID-token verification against a JWKS served over HTTP: key rotation, throttle, outages."""

from __future__ import annotations

from pathlib import Path

import pytest

from datastore.config import ConfigError
from datastore.dev.local import free_port
from graphql_api.auth.jwks import JwksKeys
from graphql_api.auth.oidc import IdToken, IdTokenRejected, IdTokenVerifier
from graphql_api.settings.api import OidcSettings
from tests.graphql_api import idp

SETTINGS = OidcSettings(issuer=idp.ISSUER, audiences=(idp.CLIENT_ID,), jwks="unused")
EMAIL = "someone@example.com"


def verifier(url: str, min_refresh_seconds: float) -> IdTokenVerifier:
    return IdTokenVerifier(SETTINGS, JwksKeys(url, min_refresh_seconds=min_refresh_seconds))


def test_verify__rotated_key__refetched_once_due() -> None:
    with idp.serving_jwks(idp.RSA) as server:
        check = verifier(server.url, min_refresh_seconds=0)
        assert check.verify(idp.id_token(EMAIL)) == IdToken(f"idp|{EMAIL}", EMAIL)
        server.keys = (idp.RSA, idp.ROTATED)
        assert check.verify(idp.id_token(EMAIL, idp.ROTATED)).email == EMAIL
        assert check.verify(idp.id_token(EMAIL, idp.ROTATED)).email == EMAIL  # now cached
        assert server.fetches == 2


def test_verify__unknown_kids__one_fetch_per_throttle_window() -> None:
    with idp.serving_jwks(idp.RSA) as server:
        check = verifier(server.url, min_refresh_seconds=3600)
        check.verify(idp.id_token(EMAIL))
        for _ in range(3):
            with pytest.raises(IdTokenRejected, match="signing key 'ec-2' is unknown"):
                check.verify(idp.id_token(EMAIL, idp.ROTATED))
        assert server.fetches == 1


def test_verify__jwks_unreachable__rejected_not_crashed() -> None:
    check = verifier(f"http://127.0.0.1:{free_port()}/jwks.json", min_refresh_seconds=0)
    with pytest.raises(IdTokenRejected, match="not valid"):
        check.verify(idp.id_token(EMAIL))


def test_verify__jwks_file_not_json__rejected_not_crashed(tmp_path: Path) -> None:
    path = tmp_path / "jwks.json"
    path.write_text("{not json")
    with pytest.raises(IdTokenRejected, match="keys are unavailable"):
        verifier(str(path), min_refresh_seconds=0).verify(idp.id_token(EMAIL))


def test_verify__unverified_email__hidden_reason() -> None:
    with idp.serving_jwks(idp.RSA) as server, pytest.raises(IdTokenRejected) as rejected:
        verifier(server.url, 0).verify(idp.id_token(EMAIL, email_verified=False))
    assert rejected.value.hidden


# --- several audiences need azp (OIDC Core 3.1.3.7, items 4 and 5) ----------------------------

TWO_CLIENTS = OidcSettings(issuer=idp.ISSUER, audiences=(idp.CLIENT_ID, idp.OTHER_CLIENT_ID), jwks="unused")
AZP = {
    "one audience, no azp": ({"aud": idp.CLIENT_ID}, None),
    "one audience as a list, no azp": ({"aud": [idp.CLIENT_ID]}, None),
    "one audience twice, no azp": ({"aud": [idp.CLIENT_ID, idp.CLIENT_ID]}, None),
    "one audience, azp our other client": ({"aud": idp.CLIENT_ID, "azp": idp.OTHER_CLIENT_ID}, None),
    "two audiences, azp ours": ({"aud": [idp.CLIENT_ID, "someone-else"], "azp": idp.CLIENT_ID}, None),
    "two audiences, azp our other client": (
        {"aud": [idp.CLIENT_ID, idp.OTHER_CLIENT_ID], "azp": idp.OTHER_CLIENT_ID},
        None,
    ),
    "two audiences, no azp": ({"aud": [idp.CLIENT_ID, "someone-else"]}, "it has several audiences and no azp"),
    "two audiences both ours, no azp": (
        {"aud": [idp.CLIENT_ID, idp.OTHER_CLIENT_ID]},
        "it has several audiences and no azp",
    ),
    "two audiences, azp the other party": (
        {"aud": [idp.CLIENT_ID, "someone-else"], "azp": "someone-else"},
        "azp is not an accepted client",
    ),
    "one audience, azp another client": (
        {"aud": idp.CLIENT_ID, "azp": "someone-else"},
        "azp is not an accepted client",
    ),
}


@pytest.mark.parametrize("case", AZP)
@pytest.mark.parametrize("key", [idp.RSA, idp.EC], ids=["RS256", "ES256"])
def test_verify__audiences_and_azp(case: str, key: idp.Key) -> None:
    claims, refused = AZP[case]
    with idp.serving_jwks(idp.RSA, idp.EC) as server:
        check = IdTokenVerifier(TWO_CLIENTS, JwksKeys(server.url, min_refresh_seconds=0))
        token = idp.id_token(EMAIL, key, **claims)
        if refused is None:
            assert check.verify(token) == IdToken(f"idp|{EMAIL}", EMAIL)
        else:
            with pytest.raises(IdTokenRejected) as rejected:
                check.verify(token)
            assert str(rejected.value) == f"the ID token is not valid: {refused}"
            assert not rejected.value.hidden  # about the token, not the account: the client is told


def oidc_env(**changes: str) -> dict[str, str]:
    env = {"OIDC_ISSUER": idp.ISSUER, "OIDC_AUDIENCE": "a, b,", "OIDC_JWKS": "https://idp.example.test/jwks"}
    return {**env, **changes}


def test_settings__all_three__parsed() -> None:
    settings = OidcSettings.from_env(oidc_env())
    assert settings == OidcSettings(idp.ISSUER, ("a", "b"), "https://idp.example.test/jwks")


def test_settings__none__sso_off() -> None:
    assert OidcSettings.from_env({}) is None


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"OIDC_JWKS": ""}, "OIDC_JWKS unset"),
        ({"OIDC_AUDIENCE": " , "}, "at least one client id"),
        ({"OIDC_JWKS": "http://idp.example.test/jwks"}, "https:// URL or a file path"),
        ({"OIDC_JWKS": "ftp://idp.example.test/jwks"}, "https:// URL or a file path"),
    ],
)
def test_settings__incomplete_or_insecure__config_error(changes: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        OidcSettings.from_env(oidc_env(**changes))


def test_settings__http_on_loopback__allowed_for_local_idps() -> None:
    settings = OidcSettings.from_env(oidc_env(OIDC_JWKS="http://127.0.0.1:8080/jwks"))
    assert settings is not None
