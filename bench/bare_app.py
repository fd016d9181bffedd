"""The cold-start lane's floor: a bare Starlette app on uvicorn answering one JSON route.

``python -m bench.bare_app PORT``. What any Starlette service on this machine pays to start
(the interpreter, Starlette, uvicorn and its loop), against which bench/cold_start.py sets the
product's start: POST / answers ``{"ok": true}``.
"""

from __future__ import annotations

import sys

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route


async def answer(_request: Request) -> JSONResponse:
    return JSONResponse({"ok": True})


app = Starlette(routes=[Route("/", answer, methods=["POST"])])


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=False)
