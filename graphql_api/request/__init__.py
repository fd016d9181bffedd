"""One request's wiring: its lifetime, which makes its session (loaders, I/O, deadline,
budgets) and its context and hands them down; the services every request shares; the
runner of the blocking work that is no DynamoDB call.
"""
