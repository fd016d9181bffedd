"""The single table through one scope: reads, pages, reads by id, transactions; the Datastore
that hands Tables out; the audit retention each Table stamps its writes' events with.
"""
