"""GraphQL over HTTP (the GraphQL-over-HTTP draft), in small parts the view puts together.

``request`` turns a GET or POST into operations, ``persisted`` resolves persisted and trusted
documents to their text, ``response`` picks the media type and status code and encodes,
``operation_name`` refuses a document of several operations that names none, and ``errors``
is the one shape every transport failure takes: a JSON GraphQL error with ``extensions.code``.
X-Request-Id is echoed on every response by graphql_api/observability/request_id.py.
"""
