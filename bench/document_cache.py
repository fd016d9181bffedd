"""`python -m bench.document_cache`: what the parsed-document cache saves per request.

Parses and validates bench's Q1, Q2, Q3 and Q5 with the server's own rules (graphql-core's, plus the
depth and alias limits), then times the cache hit that replaces both. No DynamoDB involved.
"""

from __future__ import annotations

import time

from graphql import parse, validate
from graphql.validation import specified_rules

from bench.queries import Q1, Q2, Q3, Q5
from graphql_api.execution.documents import Documents
from graphql_api.execution.library_internals import graphql_schema
from graphql_api.limits.aliases import MaxAliases
from graphql_api.limits.depth import MaxDepth
from graphql_api.schema.executable import build_schema

ROUNDS = 500


def main() -> None:
    schema = graphql_schema(build_schema())
    rules = [*specified_rules, *MaxDepth(6).validation_rules, *MaxAliases(15).validation_rules]
    cache = Documents()
    print(f"{'query':6} {'parse+validate us':>18} {'cache hit us':>13}")
    for name, text in (("Q1", Q1), ("Q2", Q2), ("Q3", Q3), ("Q5", Q5)):
        started = time.perf_counter()
        for _ in range(ROUNDS):
            document = parse(text, max_tokens=1000)
            assert not validate(schema, document, rules)
        cold = (time.perf_counter() - started) / ROUNDS
        cache.add(text, document)
        started = time.perf_counter()
        for _ in range(ROUNDS):
            assert cache.get(text) is not None
        hit = (time.perf_counter() - started) / ROUNDS
        print(f"{name:6} {cold * 1e6:18.0f} {hit * 1e6:13.2f}")


if __name__ == "__main__":
    main()
