"""A stand-in identity provider for sign-in tests: real RS256/ES256 keys, ID tokens, a JWKS.

The JWKS is written to a file or served over HTTP by a tiny real server on 127.0.0.1 that
counts its fetches, so key rotation and the refetch throttle can be observed.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Final

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

ISSUER: Final = "https://login.idp.example.test"
CLIENT_ID: Final = "hr-web"
OTHER_CLIENT_ID: Final = "hr-mobile"

SigningKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey


@dataclass(frozen=True)
class Key:
    private: SigningKey
    kid: str
    alg: str

    def jwk(self) -> dict[str, Any]:
        key = self.private.public_key()
        text = RSAAlgorithm.to_jwk(key) if isinstance(key, rsa.RSAPublicKey) else ECAlgorithm.to_jwk(key)
        public: dict[str, Any] = json.loads(text)
        return {**public, "kid": self.kid, "alg": self.alg, "use": "sig"}


RSA: Final = Key(rsa.generate_private_key(public_exponent=65537, key_size=2048), "rsa-1", "RS256")
EC: Final = Key(ec.generate_private_key(ec.SECP256R1()), "ec-1", "ES256")
# Listed nowhere until a test rotates it in.
ROTATED: Final = Key(ec.generate_private_key(ec.SECP256R1()), "ec-2", "ES256")
STRANGER: Final = Key(rsa.generate_private_key(public_exponent=65537, key_size=2048), "rsa-1", "RS256")


def jwks(*keys: Key) -> dict[str, Any]:
    return {"keys": [key.jwk() for key in keys]}


def claims(email: str, /, **overrides: Any) -> dict[str, Any]:
    """What a typical provider puts in an ID token for ``email``; ``None`` drops a claim."""
    now = int(time.time())
    base: dict[str, Any] = {
        "iss": ISSUER,
        "aud": CLIENT_ID,
        "sub": f"idp|{email}",
        "email": email,
        "email_verified": True,
        "iat": now,
        "nbf": now,
        "exp": now + 300,
    }
    merged = {**base, **overrides}
    return {name: value for name, value in merged.items() if value is not None}


def id_token(email: str, key: Key = RSA, /, **overrides: Any) -> str:
    return jwt.encode(claims(email, **overrides), key.private, algorithm=key.alg, headers={"kid": key.kid})


def write_jwks(path: Path, *keys: Key) -> Path:
    path.write_text(json.dumps(jwks(*keys)))
    return path


@dataclass
class JwksServer:
    """A JWKS served over HTTP; ``keys`` can be replaced (rotation), ``fetches`` counts GETs."""

    url: str
    keys: tuple[Key, ...]
    fetches: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def body(self) -> bytes:
        with self._lock:
            self.fetches += 1
            return json.dumps(jwks(*self.keys)).encode()


@contextmanager
def serving_jwks(*keys: Key) -> Iterator[JwksServer]:
    state = JwksServer(url="", keys=keys)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = state.body()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # the stdlib names it `format`
            pass  # keep test output quiet

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}/.well-known/jwks.json"
    thread = threading.Thread(target=server.serve_forever, name="jwks-server", daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
