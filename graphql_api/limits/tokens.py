"""Maximum tokens in a document: graphql-core's parser stops at the first token past the limit.

The parser enforces it (``max_tokens``, comments counted, so padding a document with comments
does not get round it), as Strawberry's MaxTokensLimiter sets it up; this extension also
turns the parser's refusal into a limit's own error (``limit: tokens``, ``maxTokens``), so
a client tells a document that asks too much (BAD_USER_INPUT, like the other limits) from
one that is not GraphQL (GRAPHQL_PARSE_FAILED; graphql_api/execution/errors.py).
"""

from __future__ import annotations

from collections.abc import Iterator

from graphql import GraphQLError, GraphQLSyntaxError
from strawberry.extensions import SchemaExtension


class MaxTokens(SchemaExtension):
    def __init__(self, max_tokens: int) -> None:
        self.max_tokens = max_tokens
        # graphql-core's wording of this one refusal (parser.Parser.advance_lexer); a test of
        # the limit fails if an upgrade rewords it, rather than the limit turning into a
        # parse failure unnoticed.
        self._refusal = f"Document contains more than {max_tokens} tokens. Parsing aborted."

    def on_operation(self) -> Iterator[None]:
        self.execution_context.parse_options["max_tokens"] = self.max_tokens
        yield
        result = self.execution_context.result
        if result is None or not result.errors or len(result.errors) != 1:
            return
        error = result.errors[0]
        if isinstance(error, GraphQLSyntaxError) and error.message.endswith(self._refusal):
            result.errors = [
                GraphQLError(
                    f"the document has more than {self.max_tokens} tokens; at most {self.max_tokens} are allowed",
                    source=error.source,
                    positions=error.positions,
                    extensions={"limit": "tokens", "maxTokens": self.max_tokens},
                )
            ]
