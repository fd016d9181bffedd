"""Members marked ``@deprecated`` that operations select: counted per organisation, operation
name and member on /metrics, with when each was last seen; nothing counted for operations that
select none or were refused."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import strawberry

from graphql_api.app import create_app
from graphql_api.observability.labels import OTHER
from graphql_api.schema.query import Query
from graphql_api.settings.api import ApiSettings
from tests.conftest import DatastoreFactory, Tenant
from tests.graphql_api.fixtures import Api
from tests.graphql_api.live import serving, with_settings
from tests.graphql_api.observability.test_metrics import ask, metrics_url, scrape, unique, value

__all__ = ["metrics_url"]  # the module's /metrics fixture, served once


@strawberry.type(name="Query", description="The product's root query, with members a later release removes.")
class QueryWithDeprecated(Query):
    @strawberry.field(description="The old greeting.", deprecation_reason="Use `me { firstName }`.")
    def greeting(self) -> str:
        return "hello"


@pytest.fixture(scope="module")
def api(new_datastore: DatastoreFactory, table_name: str, api_settings: ApiSettings) -> Iterator[Api]:
    settings = with_settings(api_settings, metrics_operations=("Greeter",))
    with serving(create_app(new_datastore(table_name), settings, query=QueryWithDeprecated)) as http:
        yield Api(http, settings)


def test_deprecated_field__counted_per_organisation_and_operation_with_last_seen(
    api: Api, tenant: Tenant, metrics_url: str
) -> None:
    labels = {"tenant": tenant.org_id, "member": "Query.greeting"}
    before = scrape(metrics_url)
    started = time.time()

    admin = api.admin_of(tenant)
    for _ in range(3):
        assert (
            ask(admin, "query Greeter { greeting me { email } }", unique("dep-")).json()["data"]["greeting"] == "hello"
        )
    ask(admin, "query Unnamed { greeting }", unique("dep-"))  # a name the server does not label
    ask(admin, "query Plain { me { email } }", unique("dep-"))  # selects nothing deprecated
    ask(admin, "query Refused { greeting nope }", unique("dep-"))  # does not validate: never ran
    after = scrape(metrics_url)

    counted = "hr_deprecated_selections_total"
    assert (
        value(after, counted, operation="Greeter", **labels) - value(before, counted, operation="Greeter", **labels)
        == 3
    )
    assert value(after, counted, operation=OTHER, **labels) - value(before, counted, operation=OTHER, **labels) == 1
    assert value(after, "hr_deprecated_last_seen_timestamp_seconds", member="Query.greeting") >= started
    assert not [key for key in after if key[0] == counted and ("operation", "Plain") in key[1]]
    assert not [key for key in after if key[0] == counted and ("operation", "Refused") in key[1]]
