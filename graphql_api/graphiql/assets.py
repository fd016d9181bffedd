"""GraphiQL's browser bundles: pinned npm packages fetched once into the cache, served by name.

graphiql 3.x is the last line to ship a ready-to-run browser bundle (``graphiql.min.js``, which
expects React 18's UMD builds as globals), so the page needs no build step and no CDN. Only the
files named in ASSETS are served; anything else under the path is a 404.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

from starlette.requests import Request
from starlette.responses import FileResponse, PlainTextResponse, Response
from starlette.types import Receive, Scope, Send

from datastore.dev import npm

ASSETS_PATH: Final = "/graphiql/assets"
# Bundles change only with these pins; an hour keeps reloads cheap without stale surprises.
CACHE_CONTROL: Final = "public, max-age=3600"
STATIC_DIR: Final = Path(__file__).resolve().parent / "static"


@dataclass(frozen=True, slots=True)
class Package:
    spec: str
    # The registry's dist.integrity of this exact version: a tampered tarball is refused.
    integrity: str


GRAPHIQL: Final = Package(
    "graphiql@3.8.3", "sha512-cuPDYtXVKV86Pu5PHBX642Odi/uVEE2y1Jxq5rGO/Qy1G2lRp7ZZ7a/T30RzxhuLSWo9zUbzq0P3U49//H0Ugw=="
)
REACT: Final = Package(
    "react@18.3.1", "sha512-wS+hAgJShR0KhEvPJArfuPVN1+Hz1t0Y6n5jLrGQbkb4urgPE/0Rve+1kMB1v/oWgHgm4WIcV+i7F2pTVj+2iQ=="
)
REACT_DOM: Final = Package(
    "react-dom@18.3.1",
    "sha512-5m4nQKp+rZRb09LNH59GM4BxTh9251/ylbKIbpe7TpGxfJ+9kv6BLkLBXIjjspbgbnIBNqlI23tRnTWT0snUIw==",
)

# Served name -> (package, path inside the package; None for our own files in static/).
ASSETS: Final[dict[str, tuple[Package | None, str]]] = {
    "react.production.min.js": (REACT, "umd/react.production.min.js"),
    "react-dom.production.min.js": (REACT_DOM, "umd/react-dom.production.min.js"),
    "graphiql.min.js": (GRAPHIQL, "graphiql.min.js"),
    "graphiql.min.css": (GRAPHIQL, "graphiql.min.css"),
    "start.js": (None, "start.js"),
    "page.css": (None, "page.css"),
}

MEDIA_TYPES: Final = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}


def asset_url(name: str) -> str:
    assert name in ASSETS, name
    return f"{ASSETS_PATH}/{name}"


def ensure_installed(cache_dir: Path) -> dict[str, Path]:
    """The file of every asset, fetching the pinned packages on first use (npm.NpmError if not)."""
    try:
        unpacked = {
            package: npm.fetch(cache_dir, package.spec, purpose="GraphiQL", integrity=package.integrity)
            for package in (GRAPHIQL, REACT, REACT_DOM)
        }
    except npm.NpmError as error:
        raise npm.NpmError(f"{error} (or set GRAPHIQL=false to run without GraphiQL)") from None
    files: dict[str, Path] = {}
    for name, (package, inner) in ASSETS.items():
        path = STATIC_DIR / inner if package is None else unpacked[package] / "package" / inner
        if not path.is_file():
            raise npm.NpmError(f"{package.spec if package else 'static'} has no {inner}")
        files[name] = path
    return files


class GraphiQLAssets:
    """The ASGI endpoint serving ``/graphiql/assets/{name}``."""

    def __init__(self, files: dict[str, Path]) -> None:
        self.files = files

    @classmethod
    def load(cls, cache_dir: Path) -> GraphiQLAssets:
        return cls(ensure_installed(cache_dir))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        path = self.files.get(request.path_params["name"])
        response: Response
        if path is None:
            response = PlainTextResponse("not found", status_code=404)
        else:
            headers = {"Cache-Control": CACHE_CONTROL, "X-Content-Type-Options": "nosniff"}
            response = FileResponse(path, media_type=MEDIA_TYPES[path.suffix], headers=headers)
        await response(scope, receive, send)
