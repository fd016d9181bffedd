"""A customer's data over its whole life: export, restore of one tenant, erasure of a person,
and offboarding of an organisation.

``kinds`` classifies every declared kind of item (datastore/kinds/layout.py) for each of them;
``walk`` reaches every partition of one organisation with Queries and GetItems only, never a
Scan; ``export_format`` is the versioned JSON Lines format; ``export``, ``restore``,
``erasure`` and ``offboarding`` are the four operations. docs/operations/data-lifecycle.md
describes them.
"""
