"""Documents a trusted documents manifest does not list, run in audit mode: logged and counted.

TRUSTED_DOCUMENTS_MODE=audit is for rolling a manifest out: every document runs, and each one
the manifest lacks is counted by its SHA-256 in ``hr_unlisted_documents_total{document}``
(observability/metrics.py; bounded: past METRICS_MAX_OPERATIONS distinct hashes a process
counts the rest as ``other``) and logged on ``hr.persisted`` the first time this process runs
it, with the hash and the operation's name, so the log lists what is left to add without a
line per request. The hashes a process has logged are kept in a bounded LRU: one evicted is
logged again when it next runs.
"""

from __future__ import annotations

import logging
from typing import Final

from graphql import GraphQLError, OperationDefinitionNode, parse

from graphql_api.log_output import FIELDS
from graphql_api.lru import Lru
from graphql_api.observability.labels import BoundedLabel
from graphql_api.observability.metrics import UNLISTED_DOCUMENTS

log = logging.getLogger("hr.persisted")

# Hashes whose first run this process has logged.
LOGGED_HASHES: Final = 1000


class UnlistedDocuments:
    def __init__(self, *, max_labels: int, max_tokens: int) -> None:
        self._label = BoundedLabel(max_labels)
        self._logged: Lru[str, bool] = Lru(LOGGED_HASHES)
        self.max_tokens = max_tokens

    def ran(self, sha256: str, text: str, operation_name: str | None, request_id: str) -> None:
        """``text`` (whose SHA-256 is ``sha256``) runs though the manifest does not list it."""
        UNLISTED_DOCUMENTS.labels(self._label(sha256)).inc()
        if sha256 in self._logged:
            return
        self._logged.put(sha256, True)
        name = operation_name or _only_operation_name(text, self.max_tokens)
        log.warning(
            "unlisted document ran (TRUSTED_DOCUMENTS_MODE=audit): sha256:%s operation %s (request %s)",
            sha256,
            name or "(anonymous)",
            request_id,
            extra={FIELDS: {"documentHash": f"sha256:{sha256}", "operationName": name, "requestId": request_id}},
        )


def _only_operation_name(text: str, max_tokens: int) -> str | None:
    """The name of the document's one operation; None if it has none, several, or does not parse."""
    try:
        definitions = parse(text, no_location=True, max_tokens=max_tokens).definitions
    except GraphQLError:
        return None  # it is refused as it runs, and says why there
    names = [node.name for node in definitions if isinstance(node, OperationDefinitionNode)]
    return names[0].value if len(names) == 1 and names[0] is not None else None
