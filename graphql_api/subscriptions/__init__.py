"""Live updates: GraphQL subscriptions fed by the change feed (datastore/feed/).

- ``hub``: one per process: the change feed in (the lease, the reader while this process
  holds it, the connection to whichever process reads), routed by organisation before
  decoding, each audit event offered to the organisation's subscriptions; connections counted
  and bounded; a change to a caller's standing closes their connections.
- ``stream``: one subscription's events: replayed from the audit trail after a cursor, then
  live, none missed and none twice; its queue bounded (a slow subscriber is closed SLOW).
- ``cursors``: a subscription's position in the audit trail, signed into its cursors.
- ``session``: a subscription's session, renewed for each event it delivers.
- ``connection`` and ``closing``: one live connection, and the close codes that end it;
  ``expiry``: when it ends by itself (its lifetime, its credential or sign-in session running out).
- ``resumes``: where a sign-in session's subscriptions got to, for a reconnect to any process to go on from.
- ``messages``: a message's bounds before it is parsed (its size, its operation id).
- ``live_metrics``: the live path's metrics and the log line each connection's end writes.
- ``websocket`` and ``view``: graphql-transport-ws at /graphql (Strawberry's protocol
  handler with our authentication, limits and closes).
- ``over_http``: subscriptions over HTTP, a request to /graphql asking for a stream: Server-Sent
  Events (graphql-sse's distinct connections), multipart (incremental delivery, Apollo's).

The Subscription root and what each of its fields may deliver to whom are the schema's
(graphql_api/schema/subscription.py, graphql_api/schema/live_topics.py).
"""
