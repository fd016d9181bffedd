"""The HTTP protocol of spawned worker processes, configured from the settings they load.

With several workers uvicorn hands each spawned process the protocol as an import path (a
class made at run time cannot be pickled to it), so this module loads the settings from the
environment the worker inherits, as graphql_api/entrypoints/asgi.py does, and builds the class from them:
workers guard request heads with the same bounds as a single process (limits/protocols.py).
"""

from __future__ import annotations

from graphql_api.limits.protocols import configured
from graphql_api.settings import Settings

Protocol = configured(Settings.load().api)
