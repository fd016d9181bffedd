"""Debian's Chromium, headless, driven over the DevTools protocol: a real browser for GraphiQL tests.

No driver download: the browser is the Debian package (``make test`` installs it) and the
protocol is JSON over one WebSocket (the ``websockets`` package). Every page-level request,
console message, uncaught exception and Content-Security-Policy violation is recorded.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any, Final

from websockets.sync.client import ClientConnection, connect

CHROMIUM: Final = "/usr/bin/chromium"
# No GPU, sandbox or background traffic in a container; the resolver maps every host name but
# 127.0.0.1 to nothing, so the page truly has no internet.
FLAGS: Final = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
    "--window-size=1400,900",
    "--remote-debugging-port=0",
)
START_SECONDS: Final = 30.0
# Records every CSP violation the page sees; DevTools scripts are not subject to the page's CSP.
RECORD_VIOLATIONS: Final = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__cspViolations.push(event.violatedDirective + " " + event.blockedURI);
});
"""


class BrowserError(Exception):
    """The browser did not start or a page did not reach the expected state."""


class Page:
    """One tab, with the events it produced."""

    def __init__(self, socket: ClientConnection) -> None:
        self.socket = socket
        self.ids = itertools.count(1)
        self.events: list[dict[str, Any]] = []

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        message_id = next(self.ids)
        self.socket.send(json.dumps({"id": message_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv(timeout=60))
            if message.get("id") == message_id:
                if "error" in message:
                    raise BrowserError(f"{method}: {message['error']}")
                result: dict[str, Any] = message["result"]
                return result
            self.events.append(message)

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression (awaited when it is a promise)."""
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression!r} threw: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, *, seconds: float = 30.0) -> Any:
        """Polls until ``expression`` is truthy; its value. A deadline, not a speed assertion."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.1)
        raise BrowserError(f"still false after {seconds:.0f}s: {expression}")

    def open(self, url: str) -> None:
        for domain in ("Page", "Runtime", "Network", "Log"):
            self.call(f"{domain}.enable")
        self.call("Page.addScriptToEvaluateOnNewDocument", source=RECORD_VIOLATIONS)
        self.call("Page.navigate", url=url)

    def click(self, selector: str) -> None:
        """A real mouse click in the middle of the element."""
        box = self.evaluate(
            f"(() => {{ const r = document.querySelector({json.dumps(selector)}).getBoundingClientRect();"
            " return [r.x + r.width / 2, r.y + r.height / 2]; })()"
        )
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left", clickCount=1)

    def screenshot(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"]))

    def requested_urls(self) -> list[str]:
        return [e["params"]["request"]["url"] for e in self.events if e.get("method") == "Network.requestWillBeSent"]

    def problems(self) -> list[str]:
        """Console errors, uncaught exceptions, log errors (CSP reports among them) and violations."""
        found: list[str] = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
                words = (str(arg.get("value", arg.get("description"))) for arg in params["args"])
                found.append("console: " + " ".join(words))
            elif method == "Runtime.exceptionThrown":
                found.append("exception: " + json.dumps(params["exceptionDetails"])[:500])
            elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
                found.append(f"log ({params['entry']['source']}): {params['entry']['text']}")
        found += [f"csp: {violation}" for violation in self.evaluate("window.__cspViolations || []")]
        return found


class Chromium:
    """A headless Chromium with a fresh profile; use as a context manager."""

    def __init__(self) -> None:
        self._profile = Path(tempfile.mkdtemp(prefix="chromium-"))
        self._process: subprocess.Popen[bytes] | None = None
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed in __exit__
        self.port = 0
        self._pages: list[Page] = []

    def __enter__(self) -> Chromium:
        if shutil.which(CHROMIUM) is None:
            raise BrowserError(f"{CHROMIUM} is missing: `make test` installs Debian's chromium")
        profile = self._profile
        command = [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "about:blank"]
        # A session of its own: the browser's helpers (zygote, GPU, crashpad) are stopped with
        # it, as a group, before its profile is removed.
        self._process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=self._stderr, start_new_session=True
        )
        # With port 0 Chromium picks a free port and writes it to DevToolsActivePort.
        active_port = profile / "DevToolsActivePort"
        deadline = time.monotonic() + START_SECONDS
        while not active_port.exists() or not active_port.read_text().strip():
            if self._process.poll() is not None or time.monotonic() > deadline:
                self._stderr.seek(0)
                raise BrowserError(f"chromium did not start: {self._stderr.read().decode(errors='replace')[-500:]}")
            time.sleep(0.05)
        self.port = int(active_port.read_text().splitlines()[0])
        return self

    def page(self) -> Page:
        """The first tab (about:blank), connected."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/json/list", timeout=10) as response:  # loopback
            targets = json.load(response)
        url = next(target["webSocketDebuggerUrl"] for target in targets if target["type"] == "page")
        page = Page(connect(url, max_size=None, open_timeout=10))
        self._pages.append(page)
        return page

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        for page in self._pages:
            page.socket.close()
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            # Helpers that outlived the browser kept writing into the profile while it was
            # removed ("Directory not empty: 'Default'", on a loaded CI machine).
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._process.pid, signal.SIGKILL)
        self._stderr.close()
        self._remove_profile()

    def _remove_profile(self) -> None:
        """Remove the profile, retrying while a dying helper process still writes into it."""
        for _ in range(20):
            try:
                shutil.rmtree(self._profile)
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.1)
            else:
                return
        shutil.rmtree(self._profile, ignore_errors=True)
