"""The User-Agent string kept per feature set: the header sent is the one botocore builds."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from botocore.context import start_as_current_context
from botocore.useragent import UserAgentString, register_feature_id

from datastore import keys, library_internals, user_agent
from datastore.client import make_client
from datastore.config import DatastoreSettings

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def _sent_and_built(client: DynamoDBClient, table_name: str) -> tuple[str, str]:
    """The User-Agent a GetItem sent, and what botocore's own builder gives at that moment."""
    seen: dict[str, str] = {}
    creator: Any = library_internals.user_agent_creator(client)

    def capture(request: Any, **_: Any) -> None:
        seen["sent"] = request.headers["User-Agent"].decode()
        seen["built"] = UserAgentString.to_string(creator)  # the class's method: never memoized

    client.meta.events.register("before-send.dynamodb.GetItem", capture)
    try:
        client.get_item(TableName=table_name, Key=keys.Key("ORG#X", "META").wire())
    finally:
        client.meta.events.unregister("before-send.dynamodb.GetItem", capture)
    return seen["sent"], seen["built"]


def test_memoized_client__calls__sends_the_header_botocore_builds(settings: DatastoreSettings, table_name: str) -> None:
    client = make_client(settings)
    first = _sent_and_built(client, table_name)
    second = _sent_and_built(client, table_name)
    assert first[0] == first[1]
    assert second == first


def test_memoized_client__feature_registered__string_lists_it(settings: DatastoreSettings, table_name: str) -> None:
    client = make_client(settings)
    plain, _ = _sent_and_built(client, table_name)
    with start_as_current_context():
        register_feature_id("WAITER")  # any id botocore knows: it changes the "m/" component
        with_feature, built = _sent_and_built(client, table_name)
    assert with_feature == built
    assert with_feature != plain
    assert _sent_and_built(client, table_name)[0] == plain


def test_memoize__twice__wraps_once(settings: DatastoreSettings) -> None:
    client = make_client(settings)
    creator: Any = library_internals.user_agent_creator(client)
    wrapped = creator.to_string
    user_agent.memoize(client)
    assert creator.to_string is wrapped


def test_stock_client__not_memoized(settings: DatastoreSettings) -> None:
    creator: Any = library_internals.user_agent_creator(make_client(settings, stock=True))
    assert "to_string" not in vars(creator)
