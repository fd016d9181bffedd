"""botocore's User-Agent header, built once per feature set instead of twice per call.

botocore assembles the header from about twenty components, each sanitised character by
character, when it builds a request and again just before sending it (so that features
registered meanwhile are listed): about 33 us each time, a quarter of botocore's own work on
a Query (measured with the HTTP stubbed out). Everything in it is fixed when the client is
made except the feature ids registered in the call's botocore context (retry mode, waiters,
...). So the string is kept per set of those ids: the header sent is exactly the one botocore
would have built (tests/datastore/test_user_agent.py checks it at ``before-send``).
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any, Final

from botocore.context import get_context

from datastore import library_internals

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

# Feature sets are a handful of botocore's ids; the bound only guards against a botocore
# that starts putting per-call values there (then strings past it are built, not kept).
MAX_VARIANTS: Final = 64

# The builders already memoised (ours to know: nothing is marked on botocore's object).
_memoized: weakref.WeakSet[Any] = weakref.WeakSet()


def memoize(client: DynamoDBClient) -> DynamoDBClient:
    """Make ``client`` reuse its User-Agent string per feature set (idempotent).

    botocore keeps the builder on the client (``library_internals.user_agent_creator``) and
    calls it through the instance both when it builds the request dict and in its
    ``request-created`` handler, so an instance attribute replaces both. A botocore without it
    keeps building the string per call.
    """
    creator = library_internals.user_agent_creator(client)
    if creator is None or creator in _memoized:
        return client
    build = creator.to_string
    strings: dict[frozenset[str], str] = {}

    def to_string() -> str:
        context = get_context()
        features = frozenset(context.features) if context is not None else frozenset()
        found = strings.get(features)
        if found is None:
            found = build()
            if len(strings) < MAX_VARIANTS:
                strings[features] = found  # a racing thread stores the same string
        return found

    creator.to_string = to_string
    _memoized.add(creator)
    return client
