"""The limits graphql_api/app.py installs, configured from ApiSettings: the document limits as
schema extensions, in the order they run, and the tenant buckets requests are charged to."""

from __future__ import annotations

from collections.abc import Callable

from strawberry.extensions import DisableIntrospection, SchemaExtension

from graphql_api.limits.aliases import MaxAliases
from graphql_api.limits.bulk_rows import MaxRows
from graphql_api.limits.depth import MaxDepth
from graphql_api.limits.max_cost import MaxCost
from graphql_api.limits.response_size import ResponseSizeGuard
from graphql_api.limits.shared_buckets import for_this_worker
from graphql_api.limits.tenant_rate import Buckets, TenantBuckets, TenantRate
from graphql_api.limits.tokens import MaxTokens
from graphql_api.settings.api import ApiSettings


def tenant_buckets(settings: ApiSettings) -> Buckets | None:
    """The tenant buckets requests are charged to (held by Services); None when the limit is off.

    A worker of a multi-process server shares its server's (limits/shared_buckets.py); any
    other process keeps its own.
    """
    if settings.tenant_cost_per_second <= 0:
        return None
    shared = for_this_worker(settings.tenant_cost_per_second, settings.tenant_cost_burst)
    return shared or TenantBuckets(settings.tenant_cost_per_second, settings.tenant_cost_burst)


def limit_extensions(settings: ApiSettings) -> list[Callable[[], SchemaExtension]]:
    """Factories of the extensions enforcing the document limits, in the order they run."""
    extensions: list[Callable[[], SchemaExtension]] = [
        lambda: MaxTokens(settings.max_tokens),
        lambda: MaxDepth(settings.max_depth),
        lambda: MaxAliases(settings.max_aliases),
        MaxRows,
        lambda: MaxCost(settings.max_cost),
        # After MaxCost, whose figure it charges to the session (its organisation's bucket).
        TenantRate,
        ResponseSizeGuard,
    ]
    if not settings.introspection:
        extensions.append(DisableIntrospection)
    return extensions


__all__ = ["limit_extensions", "tenant_buckets"]
