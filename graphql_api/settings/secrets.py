"""The token secret from AWS Secrets Manager, read once at start-up (JWT_SECRET_ARN).

The CloudFormation template (deploy/cloudformation.py) generates the secret in Secrets Manager
and gives the function only its ARN, so the secret itself is in no environment variable, no
template parameter and no stack event. ``graphql_api/settings/__init__.py`` calls ``fetch_secret`` when
JWT_SECRET_ARN is set, before the settings are parsed: in Lambda's init phase, once per
execution environment. The region is the ARN's; credentials come from the standard chain (the
function's role); ``AWS_ENDPOINT_URL_SECRETS_MANAGER`` (read by botocore) points it elsewhere,
as the tests point it at moto's server.

boto3 is imported by ``fetch_secret``: a process without JWT_SECRET_ARN (every one but
Lambda's) does not load it to start.
"""

from __future__ import annotations

from datastore.config import ConfigError


def region_of(arn: str) -> str:
    """The region of a Secrets Manager secret's ARN (``arn:aws:secretsmanager:<region>:...``)."""
    parts = arn.split(":")
    if len(parts) < 7 or parts[0] != "arn" or parts[2] != "secretsmanager" or parts[5] != "secret" or not parts[3]:
        raise ConfigError(f"JWT_SECRET_ARN must be a Secrets Manager secret's ARN, got {arn!r}")
    return parts[3]


def fetch_secret(arn: str) -> str:
    """The secret's string value; ConfigError naming the ARN when it cannot be read."""
    import boto3
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError, ClientError

    # Start-up waits at most about this long for Secrets Manager before failing with one line.
    config = Config(connect_timeout=2, read_timeout=5, retries={"mode": "standard", "max_attempts": 3})
    client = boto3.client("secretsmanager", region_name=region_of(arn), config=config)
    try:
        value = client.get_secret_value(SecretId=arn).get("SecretString")
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code", "error")
        raise ConfigError(f"JWT_SECRET_ARN: cannot read the secret {arn}: {code}") from None
    except BotoCoreError as error:
        raise ConfigError(f"JWT_SECRET_ARN: cannot read the secret {arn}: {error}") from None
    finally:
        client.close()
    if not value:
        raise ConfigError(f"JWT_SECRET_ARN: the secret {arn} has no string value")
    return value
