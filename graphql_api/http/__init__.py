"""GraphQL over HTTP (the GraphQL-over-HTTP draft), in small parts the view puts together.

``request`` turns a GET or POST into operations, ``persisted`` resolves persisted and trusted
documents to their text, ``response`` picks the media type and status code and encodes,
``request_id`` echoes X-Request-Id on every response, and ``errors`` is the one shape every
transport failure takes: a JSON GraphQL error with ``extensions.code``.
"""
