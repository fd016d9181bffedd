"""Who may open a live connection: a tenant's caller who is active now.

One check for both transports that hold connections open, the ASGI WebSocket
(websocket.py) and API Gateway's WebSocket API (gateway.py), so a connection is admitted
on the same terms as a query is answered (graphql_api/auth/active.py).
"""

from __future__ import annotations

from collections.abc import Callable

from datastore.errors import DatastoreError
from datastore.values.ids import OrgId
from graphql_api.auth.active import check_active
from graphql_api.execution.errors import ApiError
from graphql_api.request.context import RequestContext
from graphql_api.request.principal import Principal
from graphql_api.subscriptions.closing import Close, Closed


async def admit(principal: Principal, context_for: Callable[[Principal], RequestContext]) -> OrgId:
    """The organisation of ``principal`` if it may hold a live connection now; else Closed saying why.

    An operator's token reads no tenant's data, so it has nothing to subscribe to; a caller
    the active check refuses (suspended, terminated, revoked) is FORBIDDEN; DynamoDB not
    answering is UNAVAILABLE (try again), never an admission by default.
    """
    org_id = principal.org_id
    if org_id is None:
        raise Closed(Close.FORBIDDEN, "a platform operator's token sees no tenant data")
    context = context_for(principal)
    try:
        await check_active(context)
    except ApiError as refused:
        raise Closed(Close.FORBIDDEN, str(refused)) from None
    except DatastoreError:
        raise Closed(Close.UNAVAILABLE, "the caller could not be checked: try again shortly") from None
    finally:
        context.session.end()
    return org_id
