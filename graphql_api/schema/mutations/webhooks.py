"""createWebhookEndpoint, updateWebhookEndpoint, deleteWebhookEndpoint, rotateWebhookSecret,
redeliverWebhook (admins).

A URL is checked as an identity provider's issuer is (graphql_api/auth/outbound.py): https
only outside development, and every address its host resolves to now must be public; the
dispatcher checks it again at every attempt (a name may resolve elsewhere later).
"""

from __future__ import annotations

from typing import Annotated

import strawberry

from datastore.errors import InvalidInput
from datastore.webhooks import endpoints, outbox
from graphql_api.auth.outbound import FetchRefused, check_destination
from graphql_api.execution import ids
from graphql_api.request.context import RequestContext
from graphql_api.schema.mutations.common import INPUT_ARGUMENT, require_admin, run_write
from graphql_api.schema.types.webhook import WebhookDelivery, WebhookEndpoint

Info = strawberry.Info[RequestContext, None]

_TYPES_HELP = (
    "Audit actions to deliver (`employee.create`, `application.setStatus`), or `<entity>.*` for every action on "
    "one kind of object (`employee.*`); 1 to 50."
)


@strawberry.input(description="A new webhook endpoint.")
class CreateWebhookEndpointInput:
    url: str = strawberry.field(
        description="Where to POST events: an https URL whose host resolves to public addresses only (http to the "
        "loopback in development). At most 2,048 characters."
    )
    event_types: list[str] = strawberry.field(description=_TYPES_HELP)
    description: str = strawberry.field(default="", description="What the endpoint is for; up to 2,000 characters.")


@strawberry.type(
    description="The result of createWebhookEndpoint: the endpoint, and its signing secret, shown this once."
)
class CreateWebhookEndpointPayload:
    webhook_endpoint: WebhookEndpoint = strawberry.field(description="The new endpoint, enabled.")
    secret: str = strawberry.field(
        description="The signing secret (`whsec_` and base64, as Standard Webhooks spells it): verify each "
        "request's `webhook-signature` with it. Shown only here and by rotateWebhookSecret."
    )


@strawberry.input(description="What to change on an endpoint; fields left out keep their values.")
class UpdateWebhookEndpointInput:
    id: strawberry.ID = strawberry.field(description="The endpoint's id (`WebhookEndpoint.id`).")
    url: str | None = strawberry.field(default=None, description="A new URL, checked as createWebhookEndpoint's.")
    event_types: list[str] | None = strawberry.field(default=None, description=_TYPES_HELP)
    description: str | None = strawberry.field(default=None, description="A new description.")
    enabled: bool | None = strawberry.field(
        default=None, description="false stops deliveries; true resumes them (and clears `disabledReason`)."
    )


@strawberry.type(description="The result of updateWebhookEndpoint.")
class UpdateWebhookEndpointPayload:
    webhook_endpoint: WebhookEndpoint = strawberry.field(description="The endpoint as changed.")


@strawberry.input(description="The endpoint to delete, or whose secret to rotate.")
class WebhookEndpointIdInput:
    id: strawberry.ID = strawberry.field(description="The endpoint's id (`WebhookEndpoint.id`).")


@strawberry.type(description="The result of deleteWebhookEndpoint.")
class DeleteWebhookEndpointPayload:
    webhook_endpoint: WebhookEndpoint = strawberry.field(
        description="The endpoint as it was; nothing more is sent to it."
    )


@strawberry.type(description="The result of rotateWebhookSecret: the new secret, shown this once.")
class RotateWebhookSecretPayload:
    webhook_endpoint: WebhookEndpoint = strawberry.field(description="The endpoint.")
    secret: str = strawberry.field(
        description="The new signing secret. For 24 hours the previous one signs too: `webhook-signature` holds "
        "both signatures, so a receiver verifies with either while it switches."
    )


@strawberry.input(description="The delivery to send again.")
class RedeliverWebhookInput:
    delivery_id: strawberry.ID = strawberry.field(description="The delivery's id (`WebhookDelivery.id`).")


@strawberry.type(description="The result of redeliverWebhook.")
class RedeliverWebhookPayload:
    delivery: WebhookDelivery = strawberry.field(
        description="The delivery, PENDING and due now, with the same event id (`webhook-id`) as before."
    )


async def _checked_url(info: Info, url: str) -> str:
    """``url`` if requests may go there (its text, scheme and resolved addresses); else BAD_USER_INPUT."""
    context = info.context
    cleaned = endpoints.url(url)
    development = context.session.services.settings.development
    try:
        await context.session.services.run_blocking(check_destination, cleaned, allow_private=development)
    except FetchRefused as refused:
        raise InvalidInput("url", str(refused)) from None
    return cleaned


async def create_webhook_endpoint(
    info: Info, input: Annotated[CreateWebhookEndpointInput, INPUT_ARGUMENT]
) -> CreateWebhookEndpointPayload | None:
    context = info.context
    require_admin(context)
    url = await _checked_url(info, input.url)
    endpoint = await run_write(
        context,
        endpoints.create_endpoint,
        context.session.tenant_table(),
        url_text=url,
        types=input.event_types,
        description=input.description,
    )
    assert endpoint.secret is not None
    return CreateWebhookEndpointPayload(webhook_endpoint=WebhookEndpoint.of(endpoint), secret=endpoint.secret)


async def update_webhook_endpoint(
    info: Info, input: Annotated[UpdateWebhookEndpointInput, INPUT_ARGUMENT]
) -> UpdateWebhookEndpointPayload | None:
    context = info.context
    require_admin(context)
    endpoint_id = ids.WEBHOOK_ENDPOINT.decode(input.id, "input.id")
    url = None if input.url is None else await _checked_url(info, input.url)
    endpoint = await run_write(
        context,
        endpoints.update_endpoint,
        context.session.tenant_table(),
        endpoint_id,
        url_text=url,
        types=input.event_types,
        description=input.description,
        enabled=input.enabled,
    )
    return UpdateWebhookEndpointPayload(webhook_endpoint=WebhookEndpoint.of(endpoint))


async def delete_webhook_endpoint(
    info: Info, input: Annotated[WebhookEndpointIdInput, INPUT_ARGUMENT]
) -> DeleteWebhookEndpointPayload | None:
    context = info.context
    require_admin(context)
    endpoint_id = ids.WEBHOOK_ENDPOINT.decode(input.id, "input.id")
    endpoint = await run_write(context, endpoints.delete_endpoint, context.session.tenant_table(), endpoint_id)
    return DeleteWebhookEndpointPayload(webhook_endpoint=WebhookEndpoint.of(endpoint))


async def rotate_webhook_secret(
    info: Info, input: Annotated[WebhookEndpointIdInput, INPUT_ARGUMENT]
) -> RotateWebhookSecretPayload | None:
    context = info.context
    require_admin(context)
    endpoint_id = ids.WEBHOOK_ENDPOINT.decode(input.id, "input.id")
    endpoint = await run_write(context, endpoints.rotate_secret, context.session.tenant_table(), endpoint_id)
    assert endpoint.secret is not None
    return RotateWebhookSecretPayload(webhook_endpoint=WebhookEndpoint.of(endpoint), secret=endpoint.secret)


async def redeliver_webhook(
    info: Info, input: Annotated[RedeliverWebhookInput, INPUT_ARGUMENT]
) -> RedeliverWebhookPayload | None:
    context = info.context
    require_admin(context)
    endpoint_id, event_id = ids.WEBHOOK_DELIVERY.decode(input.delivery_id, "input.deliveryId")
    delivery = await run_write(context, outbox.redeliver, context.session.tenant_table(), endpoint_id, event_id)
    return RedeliverWebhookPayload(delivery=WebhookDelivery.of(delivery))
