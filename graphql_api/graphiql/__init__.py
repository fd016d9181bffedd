"""GraphiQL served by the API itself: no CDN, a strict Content-Security-Policy, demo sign-in in development.

``assets`` fetches and serves the pinned browser bundles, ``page`` is the HTML page and its
policy, ``sign_in`` the development-only token list behind the "Sign in as" control.
"""

from __future__ import annotations

from starlette.routing import BaseRoute, Route

from graphql_api.graphiql.assets import ASSETS_PATH, GraphiQLAssets
from graphql_api.graphiql.page import SIGN_IN_PATH, page_response, wants_page
from graphql_api.request.context import Services

__all__ = ["page_response", "routes", "wants_page"]


def routes(services: Services) -> list[BaseRoute]:
    """The routes GraphiQL needs under these settings: none when it is off."""
    settings = services.settings
    if not settings.graphiql:
        return []
    assets = GraphiQLAssets.load(settings.graphiql_cache_dir)
    found: list[BaseRoute] = [Route(ASSETS_PATH + "/{name}", assets, methods=["GET"])]
    if settings.development:
        # Imported here: only development serves it (and it pulls in the demo data's module).
        from graphql_api.graphiql.sign_in import DemoSignIn

        found.append(Route(SIGN_IN_PATH, DemoSignIn(services).tokens, methods=["GET"]))
    return found
