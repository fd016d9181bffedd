"""Abuse limits, one small class per module, all configured from ApiSettings.

Document limits (depth, aliases, tokens, cost) refuse a request before any resolver runs, so
a refused query makes no DynamoDB call; the body-size middleware refuses before GraphQL
parses anything; the tenant rate limit charges what MaxCost counted and refuses past the
organisation's bucket, before execution too; the call budget stops a request that reaches DynamoDB too often; the
response budget stops one whose pages add up to too many bytes. The ASGI middlewares
(body_size, body_timeout, concurrency) are installed by graphql_api/app.py; the uvicorn
protocols (protocols: header_timeout and head_size) by graphql_api/entrypoints/serving.py.
"""

from __future__ import annotations

from collections.abc import Callable

from strawberry.extensions import DisableIntrospection, SchemaExtension

from graphql_api.execution.analysis import AnalysisCache
from graphql_api.limits.aliases import MaxAliases
from graphql_api.limits.bulk_rows import MaxRows
from graphql_api.limits.depth import MaxDepth
from graphql_api.limits.query_cost import MaxCost
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


def limit_extensions(settings: ApiSettings, analyses: AnalysisCache) -> list[Callable[[], SchemaExtension]]:
    """Factories of the extensions enforcing the document limits, in the order they run;
    ``analyses`` the process's (limits/analysis.py)."""
    extensions: list[Callable[[], SchemaExtension]] = [
        lambda: MaxTokens(settings.max_tokens),
        lambda: MaxDepth(settings.max_depth),
        lambda: MaxAliases(settings.max_aliases),
        MaxRows,
        lambda: MaxCost(settings.max_cost, analyses),
        # After MaxCost, whose figure it charges to the session (its organisation's bucket).
        TenantRate,
        ResponseSizeGuard,
    ]
    if not settings.introspection:
        extensions.append(DisableIntrospection)
    return extensions


__all__ = [
    "MaxAliases",
    "MaxCost",
    "MaxDepth",
    "MaxRows",
    "MaxTokens",
    "ResponseSizeGuard",
    "TenantRate",
    "limit_extensions",
]
