"""A document limit as a graphql-core validation rule (one class per check and limit), and the
Strawberry extension that adds it."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable

from graphql import DocumentNode, GraphQLError, ValidationContext, ValidationRule
from strawberry.extensions import AddValidationRules

DocumentCheck = Callable[[DocumentNode, int], Iterable[GraphQLError]]
"""What a document breaks of ``limit``: an error for each excess, none when within it."""


@functools.cache
def document_rule(check: DocumentCheck, limit: int) -> type[ValidationRule]:
    """The rule that reports what ``check`` finds past ``limit``, made once per check and
    limit: Strawberry builds its limit extensions for every request, and a class made per
    request is cyclic garbage (a class refers to itself)."""

    class DocumentLimitRule(ValidationRule):
        def __init__(self, context: ValidationContext) -> None:
            super().__init__(context)
            for error in check(context.document, limit):
                context.report_error(error)

    return DocumentLimitRule


class DocumentLimit(AddValidationRules):
    """The extension that refuses the documents ``check`` finds past ``limit``."""

    def __init__(self, check: DocumentCheck, limit: int) -> None:
        self.limit = limit
        super().__init__([document_rule(check, limit)])
