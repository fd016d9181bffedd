"""A real STS on loopback for tests and benchmarks, and the five role settings that point at it.

- ``serving_sts``: moto's server mode on a free 127.0.0.1 port (AssumeRole issues a new
  access key per call, with an expiry DurationSeconds ahead).
- ``role_env``: the environment that configures the five roles against that STS.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

TENANT_ROLE = "arn:aws:iam::123456789012:role/hr-tenant-data"
SIGNIN_ROLE = "arn:aws:iam::123456789012:role/hr-sign-in"
PLATFORM_ROLE = "arn:aws:iam::123456789012:role/hr-platform"
EXPORT_ROLE = "arn:aws:iam::123456789012:role/hr-tenant-export"
LIFECYCLE_ROLE = "arn:aws:iam::123456789012:role/hr-tenant-lifecycle"


@contextmanager
def serving_sts() -> Iterator[str]:
    """moto's server on a free loopback port; yields its endpoint URL."""
    # Imported here: only the sessions that start an STS pay for importing moto.
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        yield f"http://{host}:{port}"
    finally:
        server.stop()


def role_env(sts_url: str, **overrides: str) -> dict[str, str]:
    return {
        "TENANT_ROLE_ARN": TENANT_ROLE,
        "SIGNIN_ROLE_ARN": SIGNIN_ROLE,
        "PLATFORM_ROLE_ARN": PLATFORM_ROLE,
        "EXPORT_ROLE_ARN": EXPORT_ROLE,
        "LIFECYCLE_ROLE_ARN": LIFECYCLE_ROLE,
        "AWS_ENDPOINT_URL_STS": sts_url,
        **overrides,
    }
