"""Maximum DynamoDB calls per request.

Charged by RequestSession.run before each datastore call is awaited: a run is
counted as one call when it starts and the request's CallLog counts what it really made,
so concurrent runs of one loader batch cannot all slip under the budget together. A batch
already dispatched finishes (it may go over by its own size); nothing is dispatched after.
"""

from __future__ import annotations

from dataclasses import dataclass

from datastore.aws.calls import CallLog
from graphql_api.execution.errors import ApiError, Code


@dataclass
class CallBudget:
    limit: int
    dispatched: int = 0

    def charge(self, log: CallLog) -> None:
        self.dispatched += 1
        used = max(self.dispatched, len(log.calls) + 1)
        if used > self.limit:
            raise ApiError(
                Code.BAD_USER_INPUT,
                f"the request needs more than {self.limit} DynamoDB calls; ask for less",
                limit="dynamodbCalls",
                maxCalls=self.limit,
            )
