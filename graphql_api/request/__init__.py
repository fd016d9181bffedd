"""One request's wiring: its context, its session (loaders, I/O, deadline,
budgets) and its lifetime.
"""
