"""The production ASGI entry point: ``uvicorn graphql_api.asgi:app --workers N``.

Each worker process imports this module and builds its own app (its own boto3 client, pools
and loaders) from the environment. Nothing is shared between workers but DynamoDB itself, so
anything a request depends on (cursors, idempotency records, persisted documents) must live
there or be derived from shared settings such as the signing secret.
"""

from __future__ import annotations

from datastore.config import ConfigError, DatastoreSettings
from datastore.store import Datastore
from graphql_api.app import create_app
from graphql_api.config import ApiSettings
from graphql_api.observability.logging import configure_logging

_datastore_settings = DatastoreSettings.from_env()
if _datastore_settings.embedded:
    # Workers never start an engine of their own: `server.py run` (WORKERS=N) starts one and
    # passes its endpoint down; in production DYNAMODB_ENDPOINT is `aws`.
    raise ConfigError("set DYNAMODB_ENDPOINT (a URL, or `aws` for AWS's regional endpoint)")

_api_settings = ApiSettings.from_env()
configure_logging(_api_settings.log_format)
datastore = Datastore.connect(_datastore_settings)
app = create_app(datastore, _api_settings)
