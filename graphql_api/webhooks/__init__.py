"""Webhooks out: the organisation's audit events POSTed to its endpoints, signed, retried.

- the retry schedule and every bound come from the environment (WEBHOOK_*) with the rest
  of the configuration: graphql_api/settings/webhooks.py.
- ``message``: the thin event a receiver gets and its Standard Webhooks headers, signed
  with the ``standardwebhooks`` library (both secrets during a rotation's overlap).
- ``attempt``: one attempt of one delivery through the outbound rules identity providers'
  fetches follow (graphql_api/auth/outbound.py), and what its answer means: delivered, a
  retry at the schedule's next step (or ``Retry-After``), or final.
- ``rounds``: one organisation's round, whoever runs it: the outbox written from the audit
  trail, each object's oldest pending delivery, one attempt recorded, the endpoint's health.
- ``queue`` and ``queue_delivery``: on AWS, the same rounds run by Lambda functions from the
  table's stream, an SQS queue and a scheduled sweep (WEBHOOKS=queue).
- ``dispatcher``: the one process per table that delivers (a lease), woken by the change
  feed's audit events and sweeping now and then, bounded per endpoint and per organisation.
- ``metrics``: deliveries by status, attempts, lag, per organisation (bounded labels).

The outbox itself (what is owed, what each attempt got) is the datastore's:
datastore/webhooks/.
"""
