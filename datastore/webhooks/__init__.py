"""Webhooks: an organisation's endpoints, and the outbox of deliveries to them.

The values stored (an endpoint, a delivery, the dispatcher's cursor) are in
datastore/kinds/webhook_entities.py, their kinds declared with every other in
datastore/kinds/layout.py.

- ``endpoints``: what an organisation's admins do with its endpoints (create, update,
  delete, rotate the secret), each write with its audit event, at most ``MAX_ENDPOINTS``.
- ``outbox``: deliveries. Each audit event an endpoint subscribes to becomes one delivery
  item in the organisation's partition (with TTL) before anything is sent, so a crash, a
  restart or a lease takeover loses none; the dispatcher (graphql_api/webhooks/) reads the
  pending ones, attempts them and records each attempt here.

Nothing here sends a request: sending, signing and the retry schedule's clock are the
dispatcher's. The datastore only keeps what was decided.
"""
