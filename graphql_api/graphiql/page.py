"""The GraphiQL page: static HTML with no inline script or style, under a strict policy.

Everything the page runs is a file served by this server (assets.py); the endpoint and the
sign-in list's address reach the start script as data attributes, not as inline code.
"""

from __future__ import annotations

from html import escape
from typing import Final

from starlette.requests import Request
from starlette.responses import HTMLResponse

from graphql_api.graphiql.assets import asset_url

# The development-only sign-in list (sign_in.py), which the page's start script reads: named
# here, so a process that serves no sign-in list does not import it.
SIGN_IN_PATH: Final = "/dev/tokens"
CONTENT_SECURITY_POLICY: Final = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        # The fetcher posts to /graphql (and opens its WebSocket for subscriptions: CSP 3's 'self'
        # matches ws: and wss: of the same host) and the start script reads the sign-in list.
        "connect-src 'self'",
        # graphiql.min.css embeds its fonts (Roboto, Fira Code) and a few icons as data: URLs.
        "font-src 'self' data:",
        "img-src 'self' data:",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    ]
)

SECURITY_HEADERS: Final = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    # The page may later carry a development token in its header editor: never cache it.
    "Cache-Control": "no-store",
}


def page_html(endpoint: str, *, sign_in: bool) -> str:
    sign_in_attribute = f' data-sign-in="{escape(SIGN_IN_PATH)}"' if sign_in else ""
    scripts = "\n".join(
        f'    <script src="{asset_url(name)}"></script>'
        for name in ("react.production.min.js", "react-dom.production.min.js", "graphiql.min.js", "start.js")
    )
    return f"""<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>GraphiQL · HR API</title>
    <!-- An empty icon: no /favicon.ico request, which this API would answer 404. -->
    <link rel="icon" href="data:,">
    <link rel="stylesheet" href="{asset_url("graphiql.min.css")}">
    <link rel="stylesheet" href="{asset_url("page.css")}">
  </head>
  <body>
    <div id="graphiql" data-endpoint="{escape(endpoint)}"{sign_in_attribute}>Loading GraphiQL…</div>
{scripts}
  </body>
</html>
"""


def wants_page(request: Request) -> bool:
    """A browser's visit to the endpoint: a GET that accepts HTML and sends no GraphQL (no
    ``query``, nor a persisted document's ``extensions`` or ``documentId``)."""
    parameters = request.query_params
    if request.method != "GET" or "query" in parameters or "extensions" in parameters or "documentId" in parameters:
        return False
    accept = request.headers.get("accept", "")
    return "text/html" in accept or "*/*" in accept


def page_response(endpoint: str, *, sign_in: bool) -> HTMLResponse:
    """The page for ``GET endpoint`` with ``Accept: text/html``; ``sign_in`` in development only."""
    return HTMLResponse(page_html(endpoint, sign_in=sign_in), headers=SECURITY_HEADERS)
