"""A held subscription's context: the request's, with the process's hub that feeds it.

The transports that hold a subscription open (websocket.py, over_http.py) are handed the hub
when the app builds them, after the hub; they put it here for the Subscription fields
(graphql_api/schema/subscription.py). On AWS (gateway.py) nothing is held: its contexts are
plain request contexts, and the fields deliver the one event they are given.
"""

from __future__ import annotations

from dataclasses import dataclass

from graphql_api.request.context import RequestContext
from graphql_api.subscriptions.hub import LiveHub


@dataclass(frozen=True, slots=True, kw_only=True)
class LiveContext(RequestContext):
    hub: LiveHub
