"""Every kind of item the table holds, declared once, and the typed values read from them:
the entities, the values webhooks store, and the datastore's own bookkeeping.
"""
