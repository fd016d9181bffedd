"""Running a GraphQL document.

``documents`` keeps each document clients run with its analyses (parse and validation, cost
and root fields from ``analysis``, compiled plan, relation plans), read through the one
selection walk of ``selection``; the cost is ``query_cost``'s (``introspection_cost`` for
introspection, ``rows`` for a bulk field's rows), which the limits refuse past; ``operation``
is one operation's record as it runs; ``ids`` the global ids objects are named by; ``fields``
the declarations both executors read (a root field's load, a relation's read,
``Deferred``); ``batch_loader`` the request's batched DataLoader and ``loaders`` the entity
loaders built on it; ``plan/`` the compiled executor, graphql-core the other; ``errors`` the
codes every error leaves with; ``cost`` the ``extensions.cost`` report and ``charge`` the
tenant charge it shows; ``library_internals`` the two private names of Strawberry still
relied on.
"""
