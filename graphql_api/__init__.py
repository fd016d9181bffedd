"""The GraphQL API over the datastore, in layers.

Each line below is a layer, the ground first. A module imports from its own subpackage and
from the lines below its own, never from a line above: not at the top of a file, not inside a
function, not under TYPE_CHECKING. What two layers both need lives in the lower one; what a
lower layer must call of a higher one is handed to it (by constructor, by the context).
tests/graphql_api/test_layers.py holds the code to this map.

    lru, log_output, host   the ground: each imports nothing of graphql_api
    settings                all configuration, read once from the environment
    execution               GraphQL errors, documents and their analyses (cost, rows), loaders, plans
    observability           access log, metrics, traces, the request id, refusals counted once
    limits                  the abuse limits
    request                 one request: its caller, context, session, services, lifetime
    auth                    tokens, API keys, the backend, sign-in, the caller's active check
    http                    GraphQL over HTTP: the transport, persisted documents, export, health
    subscriptions           live updates: the hub, WebSocket, HTTP streams, API Gateway
    bulk                    bulk onboarding batches (importEmployees, ``server.py import``)
    schema                  the Strawberry schema: root and object types, mutations, permissions
    webhooks                webhook delivery
    graphiql                the GraphiQL page
    app                     app.py: builds the services, then each part from them, in order
    entrypoints             how a process starts: ASGI, Lambda, uvicorn's workers
"""
