"""The table and everything stored in it: DynamoDB, and nothing of GraphQL.

Its packages, top floor first. Imports run down the list: a module imports from its own
package and from the lines below it, never from one above (tests/datastore/test_layers.py).

  dev/          development only: the embedded DynamoDB Local, a local STS, npm, the demo data
  feed/         the change feed: the table's stream, read once per instance, to every worker
  lifecycle/    a customer's data over its life: export, restore, erasure, offboarding
  upkeep/       the table's own care: provisioning, layout version, migrations, counters
  webhooks/     an organisation's webhook endpoints and the outbox of deliveries
  signin/       who someone is: identities, identity providers, sessions, API keys
  tenants/      one organisation's data: departments, employees, jobs, applications, ...
  writes/       the envelope every write goes through: idempotency, locking, audit, changes
  table/        the single table through one scope, the Datastore, each Table's retention
  aws/          talking to AWS: the DynamoDB client, its HTTP, retries, credentials, calls
  kinds/        every kind of item, declared once, and the typed values read from them
  tenancy/      the key vocabulary and the scopes that bound what a Table may touch
  values/       values a caller hands in: ids, checked text, folded names, the wire format
  config.py     the settings, parsed from the environment
  proxy.py      which HTTP proxy a connection to DynamoDB goes through
  errors.py     the typed failures every layer raises
"""
