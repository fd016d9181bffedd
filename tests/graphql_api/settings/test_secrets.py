"""The token secret read from Secrets Manager at start-up, against a real local endpoint (moto's server)."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest

from datastore.config import ConfigError
from datastore.dev.local_sts import serving_sts
from graphql_api.settings import Settings
from graphql_api.settings.secrets import region_of

REGION = "eu-west-1"
# Credentials moto accepts; the function's role gives real ones in Lambda.
FAKE_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_SESSION_TOKEN": "testing"}


@pytest.fixture(scope="module")
def secrets_endpoint() -> Iterator[str]:
    """moto's server on the loopback (the one datastore/dev/local_sts.py starts): it speaks Secrets Manager too."""
    with serving_sts() as url:
        yield url


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch, secrets_endpoint: str) -> str:
    for name, value in FAKE_CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_ENDPOINT_URL_SECRETS_MANAGER", secrets_endpoint)
    monkeypatch.delenv("JWT_SECRET", raising=False)
    monkeypatch.setenv("HR_ENV", "production")
    return secrets_endpoint


def create_secret(endpoint: str, name: str, value: str) -> str:
    client = boto3.client("secretsmanager", region_name=REGION, endpoint_url=endpoint)
    arn: str = client.create_secret(Name=name, SecretString=value)["ARN"]
    return arn


def test_load__jwt_secret_arn__secret_read_from_secrets_manager(aws: str, monkeypatch: pytest.MonkeyPatch) -> None:
    value = "s" * 20 + "generated-by-secrets-manager-0123456789"
    arn = create_secret(aws, "hr-api-jwt-read", value)
    monkeypatch.setenv("JWT_SECRET_ARN", arn)

    settings = Settings.load()

    assert settings.api.jwt_secret == value
    assert settings.api.environment == "production"


def test_load__jwt_secret_arn_and_jwt_secret__refused(aws: str, monkeypatch: pytest.MonkeyPatch) -> None:
    arn = create_secret(aws, "hr-api-jwt-both", "x" * 40)
    monkeypatch.setenv("JWT_SECRET_ARN", arn)
    monkeypatch.setenv("JWT_SECRET", "y" * 40)

    with pytest.raises(ConfigError, match="set JWT_SECRET or JWT_SECRET_ARN, not both"):
        Settings.load()


def test_load__unknown_secret__one_line_naming_it(aws: str, monkeypatch: pytest.MonkeyPatch) -> None:
    arn = f"arn:aws:secretsmanager:{REGION}:123456789012:secret:hr-api-missing-AbCdEf"
    monkeypatch.setenv("JWT_SECRET_ARN", arn)

    with pytest.raises(ConfigError) as raised:
        Settings.load()

    assert str(raised.value) == f"JWT_SECRET_ARN: cannot read the secret {arn}: ResourceNotFoundException"


def test_load__short_secret__refused_like_a_short_jwt_secret(aws: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JWT_SECRET_ARN", create_secret(aws, "hr-api-jwt-short", "too-short"))

    with pytest.raises(ConfigError, match="JWT_SECRET must be at least 32 characters"):
        Settings.load()


@pytest.mark.parametrize("arn", ["hr-api-jwt", "arn:aws:s3:::bucket", "arn:aws:secretsmanager::1:secret:x"])
def test_region_of__not_a_secret_arn__refused(arn: str) -> None:
    with pytest.raises(ConfigError, match="must be a Secrets Manager secret's ARN"):
        region_of(arn)


def test_region_of__secret_arn__its_region() -> None:
    assert region_of("arn:aws:secretsmanager:ap-south-1:123456789012:secret:hr-AbCdEf") == "ap-south-1"
