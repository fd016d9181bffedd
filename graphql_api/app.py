"""The Starlette application."""

from __future__ import annotations

import asyncio

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from datastore.store import Datastore


def create_app(datastore: Datastore) -> Starlette:
    async def healthz(_request: Request) -> JSONResponse:
        reachable = await asyncio.to_thread(datastore.reachable)
        return JSONResponse(
            {"status": "ok" if reachable else "unavailable", "dynamodb": reachable},
            status_code=200 if reachable else 503,
        )

    return Starlette(routes=[Route("/healthz", healthz)])
