"""Datastore settings: the role settings that turn on per-scope credentials."""

from __future__ import annotations

import pytest

from datastore.config import (
    DEFAULT_RETENTION_DAYS,
    MAX_RETENTION_DAYS,
    MIN_RETENTION_DAYS,
    ROLE_SETTINGS,
    ConfigError,
    DatastoreSettings,
    RoleSettings,
)
from datastore.dev.local_sts import EXPORT_ROLE, LIFECYCLE_ROLE, PLATFORM_ROLE, SIGNIN_ROLE, TENANT_ROLE, role_env
from deploy import cloudformation

STS = "http://127.0.0.1:5000"


def test_role_settings__none_set__none_and_one_credential() -> None:
    assert RoleSettings.from_env({}) is None
    assert DatastoreSettings.from_env({}).roles is None


def test_role_settings__all_set__defaults() -> None:
    roles = RoleSettings.from_env(role_env(STS))
    assert roles == RoleSettings(
        TENANT_ROLE, SIGNIN_ROLE, PLATFORM_ROLE, EXPORT_ROLE, LIFECYCLE_ROLE, 3600, 300, 1000, STS
    )
    assert DatastoreSettings.from_env(role_env(STS)).roles == roles


def test_role_settings__tuned__read() -> None:
    env = role_env("", ROLE_SESSION_SECONDS="900", ROLE_REFRESH_SECONDS="450", ROLE_CACHE_SIZE="2")
    assert RoleSettings.from_env(env) == RoleSettings(
        TENANT_ROLE, SIGNIN_ROLE, PLATFORM_ROLE, EXPORT_ROLE, LIFECYCLE_ROLE, 900, 450, 2, None
    )


def test_role_settings__one_missing__config_error_names_it() -> None:
    env = role_env(STS)
    del env["SIGNIN_ROLE_ARN"]
    with pytest.raises(ConfigError, match=r"; SIGNIN_ROLE_ARN unset$"):
        RoleSettings.from_env(env)


def test_role_settings__not_a_role_arn__config_error() -> None:
    with pytest.raises(ConfigError, match="PLATFORM_ROLE_ARN must be an IAM role ARN"):
        RoleSettings.from_env(role_env(STS, PLATFORM_ROLE_ARN="hr-platform"))


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"ROLE_SESSION_SECONDS": "899"}, "ROLE_SESSION_SECONDS must be at least 900, got 899"),
        ({"ROLE_SESSION_SECONDS": "43201"}, "ROLE_SESSION_SECONDS must be at most 43200, got 43201"),
        (
            {"ROLE_REFRESH_SECONDS": "1801"},
            r"ROLE_REFRESH_SECONDS must be at most half of ROLE_SESSION_SECONDS \(3600\)",
        ),
        ({"ROLE_REFRESH_SECONDS": "0"}, "ROLE_REFRESH_SECONDS must be at least 1, got 0"),
        ({"ROLE_CACHE_SIZE": "0"}, "ROLE_CACHE_SIZE must be at least 1, got 0"),
    ],
)
def test_role_settings__out_of_bounds__config_error(overrides: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        RoleSettings.from_env(role_env(STS, **overrides))


def test_role_settings__at_bounds__accepted() -> None:
    roles = RoleSettings.from_env(role_env(STS, ROLE_SESSION_SECONDS="43200", ROLE_REFRESH_SECONDS="21600"))
    assert roles is not None and (roles.session_seconds, roles.refresh_seconds) == (43200, 21600)


def test_role_settings__template__passes_exactly_the_settings_read() -> None:
    assert sorted(cloudformation.ROLE_SETTINGS.values()) == sorted(ROLE_SETTINGS)


def test_audit_retention__unset__seven_years() -> None:
    assert DatastoreSettings.from_env({}).audit_retention_days == DEFAULT_RETENTION_DAYS == 2557


@pytest.mark.parametrize("days", [str(MIN_RETENTION_DAYS), "400", str(MAX_RETENTION_DAYS)])
def test_audit_retention__within_bounds__read(days: str) -> None:
    assert DatastoreSettings.from_env({"AUDIT_RETENTION_DAYS": days}).audit_retention_days == int(days)


@pytest.mark.parametrize(
    ("days", "message"),
    [
        (str(MIN_RETENTION_DAYS - 1), f"AUDIT_RETENTION_DAYS must be at least {MIN_RETENTION_DAYS}"),
        (str(MAX_RETENTION_DAYS + 1), f"AUDIT_RETENTION_DAYS must be at most {MAX_RETENTION_DAYS}"),
        ("seven years", "AUDIT_RETENTION_DAYS must be an integer"),
    ],
)
def test_audit_retention__out_of_bounds__config_error_names_it(days: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        DatastoreSettings.from_env({"AUDIT_RETENTION_DAYS": days})
