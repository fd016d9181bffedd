"""Real OpenID providers for the sign-in tests, and a small client of the code flow with PKCE.

Each provider is panva's oidc-provider (a certified OpenID Provider), pinned in
tests/graphql_api/frontend/oidc_provider/ and installed once into .cache/ like the other npm
packages, run by Node on a free port of the loopback with its development login and consent
pages. ``CodeFlow`` drives them over HTTP as a browser would: the authorization request
(S256 code challenge, state, nonce), the login and consent forms, the redirect back with
the code, and the token request with the code verifier.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
import shutil
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import httpx

from datastore.dev.local import free_port
from tests.graphql_api.frontend.tools import OIDC_PROVIDER, oidc_provider_modules

NODE: Final = shutil.which("node")
REDIRECT_URI: Final = "http://127.0.0.1:9/callback"  # never fetched: the client reads the code off it
START_SECONDS: Final = 30.0
_FORM = re.compile(r'<form[^>]*action="([^"]+)"[^>]*method="post"', re.IGNORECASE)
_HIDDEN = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)"')


@dataclass
class Provider:
    issuer: str
    client_id: str
    process: subprocess.Popen[str]
    output: list[str]

    @property
    def discovery(self) -> dict[str, Any]:
        found: dict[str, Any] = httpx.get(f"{self.issuer}/.well-known/openid-configuration", timeout=10).json()
        return found


@contextmanager
def running_provider(
    folder: Path, people: dict[str, str], *, client_id: str = "hr-web", unverified: frozenset[str] = frozenset()
) -> Iterator[Provider]:
    """A provider whose logins are ``people``'s keys, each with the email it maps to (verified
    unless its login is in ``unverified``); one public client with REDIRECT_URI."""
    assert NODE is not None, "node is needed for the sign-in tests' providers; install Node.js and npm"
    folder.mkdir(parents=True, exist_ok=True)
    modules = folder / "node_modules"
    if not modules.exists():
        modules.symlink_to(oidc_provider_modules(), target_is_directory=True)
    shutil.copy(OIDC_PROVIDER / "provider.mjs", folder / "provider.mjs")
    port = free_port()
    config = {
        "port": port,
        "clients": [{"client_id": client_id, "redirect_uris": [REDIRECT_URI]}],
        "people": {
            login: {"email": email, "email_verified": login not in unverified} for login, email in people.items()
        },
    }
    process = subprocess.Popen(
        [NODE, "provider.mjs", json.dumps(config)],
        cwd=folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    output: list[str] = []
    ready = threading.Event()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            output.append(line.rstrip())
            if line.startswith("ready "):
                ready.set()

    reader = threading.Thread(target=read, name="oidc-provider-output", daemon=True)
    reader.start()
    try:
        if not ready.wait(START_SECONDS):
            raise RuntimeError(f"oidc-provider did not start: {output[-10:]}")
        yield Provider(f"http://127.0.0.1:{port}", client_id, process, output)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        reader.join(timeout=10)
        if process.stdout is not None:
            process.stdout.close()


def _challenge(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


@dataclass(frozen=True)
class AuthorizationRequest:
    url: str
    state: str
    verifier: str


@dataclass
class CodeFlow:
    """Signs a person in at a provider with the authorization code flow and PKCE; the ID token.

    ``authorization_endpoint``/``token_endpoint``/``client_id`` are what GET /auth/discovery
    answers.
    """

    authorization_endpoint: str
    token_endpoint: str
    client_id: str
    steps: list[str]

    @classmethod
    def from_discovery(cls, answer: dict[str, Any]) -> CodeFlow:
        return cls(answer["authorization_endpoint"], answer["token_endpoint"], answer["client_id"], [])

    def authorization_request(self) -> AuthorizationRequest:
        """A new authorization request: its URL (S256 challenge, state, nonce) and the verifier."""
        verifier = secrets.token_urlsafe(48)
        state, nonce = secrets.token_urlsafe(16), secrets.token_urlsafe(16)
        query = {
            "client_id": self.client_id,
            "redirect_uri": REDIRECT_URI,
            "response_type": "code",
            "scope": "openid email",
            "state": state,
            "nonce": nonce,
            "code_challenge": _challenge(verifier),
            "code_challenge_method": "S256",
        }
        return AuthorizationRequest(f"{self.authorization_endpoint}?{urlencode(query)}", state, verifier)

    def redeem(self, location: str, request: AuthorizationRequest) -> str:
        """The ID token for the code the provider sent back to ``location``."""
        with httpx.Client(timeout=10) as app:
            return self._redeem(app, location, request.state, request.verifier)

    def sign_in(self, login: str) -> str:
        request = self.authorization_request()
        state, verifier = request.state, request.verifier
        with httpx.Client(timeout=10, follow_redirects=False) as browser:
            response = browser.get(request.url)
            self.steps.append(f"GET {response.request.url.path} -> {response.status_code}")
            for _ in range(20):
                if response.is_redirect:
                    location = urljoin(str(response.request.url), response.headers["location"])
                    if location.startswith(REDIRECT_URI):
                        return self._redeem(browser, location, state, verifier)
                    response = browser.get(location)
                    self.steps.append(f"GET {urlsplit(location).path} -> {response.status_code}")
                    continue
                form = _FORM.search(response.text)
                assert response.status_code == 200 and form is not None, (self.steps, _pre(response.text))
                fields = dict(_HIDDEN.findall(response.text))
                if fields.get("prompt") == "login":
                    fields.update(login=login, password="any")
                action = urljoin(str(response.request.url), form.group(1))
                response = browser.post(action, data=fields)
                self.steps.append(f"POST {urlsplit(action).path} ({fields.get('prompt')}) -> {response.status_code}")
        raise AssertionError(f"the code flow did not come back: {self.steps}")

    def _redeem(self, browser: httpx.Client, location: str, state: str, verifier: str) -> str:
        query = parse_qs(urlsplit(location).query)
        assert query.get("state") == [state], query
        assert "code" in query, query
        self.steps.append("redirect to the app with code and state")
        response = browser.post(
            self.token_endpoint,
            data={
                "grant_type": "authorization_code",
                "code": query["code"][0],
                "redirect_uri": REDIRECT_URI,
                "client_id": self.client_id,
                "code_verifier": verifier,
            },
        )
        self.steps.append(f"POST {urlsplit(self.token_endpoint).path} (authorization_code) -> {response.status_code}")
        assert response.status_code == 200, response.text
        id_token: str = response.json()["id_token"]
        return id_token


def _pre(page: str) -> str:
    """The error a provider's page shows (its <pre> block), for assertion messages."""
    found = re.search(r"<pre>(.*?)</pre>", page, re.DOTALL)
    return page[-300:] if found is None else found.group(1)
