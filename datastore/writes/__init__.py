"""The envelope every write goes through: idempotency, optimistic locking, audit, change records."""
