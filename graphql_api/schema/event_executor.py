"""Each subscription event executed with a memo of its own, so a long subscription holds no more than a short one.

graphql-core 3.3 executes each event on a shallow copy of the subscription's executor
(``build_per_event_executor``), and the copy shares the executor's memo of collected subfields.
That memo is keyed by the identity of the field lists an execution builds, and each event builds
its lists anew: every event of every subscription added entries that lived as long as the
subscription (a worker with 20 busy subscribers grew by about 20 MB a minute, without end;
bench/live_soak.py). Here each event's executor memoizes into a dict of its own, dropped with the
event; queries and mutations (no per-event copy) memoize as before.
"""

from __future__ import annotations

from typing import Any

from graphql import GraphQLObjectType
from graphql.execution.collect_fields import CollectedFields, FieldDetailsList, collect_subfields
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext


class PerEventMemo(StrawberryGraphQLCoreExecutionContext):
    # The memo of one event's execution; None on the subscription's own executor (and a query's).
    event_subfields: dict[tuple[GraphQLObjectType, int], tuple[FieldDetailsList, CollectedFields]] | None = None

    def build_per_event_executor(self, payload: Any) -> PerEventMemo:
        executor = super().build_per_event_executor(payload)
        assert isinstance(executor, PerEventMemo)
        executor.event_subfields = {}
        return executor

    def collect_subfields(
        self, return_type: GraphQLObjectType, field_details_list: FieldDetailsList
    ) -> CollectedFields:
        memo = self.event_subfields
        if memo is None:
            return super().collect_subfields(return_type, field_details_list)
        # As the library memoizes: by the list's identity, the list kept alive beside its value.
        key = (return_type, id(field_details_list))
        cached = memo.get(key)
        if cached is not None:
            return cached[1]
        collected = collect_subfields(
            self.schema,
            self.fragments,
            self.variable_values,
            self.operation,
            return_type,
            field_details_list,
            self.hide_suggestions,
        )
        memo[key] = (field_details_list, collected)
        return collected
