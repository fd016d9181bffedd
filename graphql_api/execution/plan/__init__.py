"""Compiled execution plans.

A validated query is compiled once per (document, operation, @skip/@include values), kept
with the document's other analyses (execution/documents.py), into a plan (compiler.py): for
every selected field, its resolver, its constant arguments and how to complete its value.
The runner (runner.py) walks the loaded entities with it and builds the result directly,
with graphql-core's semantics for errors and null propagation. Anything a plan does not
cover is left to graphql-core, for the whole operation (extension.py).
"""
