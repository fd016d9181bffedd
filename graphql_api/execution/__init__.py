"""Running a GraphQL document.

``documents`` keeps each document clients run with its analyses (parse and validation, cost
and root fields from ``analysis``, compiled plan, relation plans), read through the one
selection walk of ``selection``; ``operation`` is one operation's record as it runs;
``fields`` the declarations both executors read (a root field's load, a relation's read,
``Deferred``); ``batch_loader`` the request's batched DataLoader; ``plan/`` the compiled
executor, graphql-core the other; ``errors`` the codes every error leaves with; ``cost`` the
``extensions.cost`` report; ``operation_name`` the refusal of an unnamed choice of operation;
``library_internals`` the two private names of Strawberry still relied on.
"""
