"""uvicorn's WebSocket protocol, closing sockets at shutdown the way our docs and clients expect.

At SIGTERM uvicorn closes every open WebSocket itself, before the app's lifespan ends (so
before the live hub could say anything), with 1012 and no reason. A client would reconnect
on either, but what the server says when it stops is one thing, documented
(docs/api/subscriptions.md): 1001 with the reason of Close.GOING_AWAY (closing.py), the
same the hub sends.

And the app speaks first: a client reconnects the moment it reads the close frame, maybe to
another process, which resumes its subscriptions from where this one saved they got to
(graphql_api/subscriptions/resumes.py). So the socket's app is told the server is going away
(the disconnect message, 1001 and that reason) and closes the socket itself once it has
saved that (graphql_api/subscriptions/websocket.py); a socket whose app has not closed it
within ``APP_CLOSE_SECONDS`` is closed here, as before. The rest (the transport closed, the
keep-alive stopped) is uvicorn's.
"""

from __future__ import annotations

from typing import Final

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

from graphql_api.subscriptions.closing import Close

# For ``uvicorn.run(ws=...)``, in this process or imported by a spawned worker.
WEBSOCKET_PROTOCOL = "graphql_api.entrypoints.websocket_protocol:GoingAwayProtocol"

# How long the app may take to close its socket once told the server is stopping (its saves
# are bounded by resumes.STORE_SECONDS); uvicorn's graceful shutdown waits for it.
APP_CLOSE_SECONDS: Final = 5.0


class GoingAwayProtocol(WebSocketsSansIOProtocol):
    _told_going_away = False

    def shutdown(self) -> None:
        if self.handshake_complete and not self.close_sent and not self._told_going_away:
            self._told_going_away = True
            code, reason = Close.GOING_AWAY.code, Close.GOING_AWAY.reason
            self.queue.put_nowait({"type": "websocket.disconnect", "code": code, "reason": reason})
            self.loop.call_later(APP_CLOSE_SECONDS, self._close_going_away)
            return
        super().shutdown()

    def _close_going_away(self) -> None:
        if not self.close_sent and not self.transport.is_closing():
            code, reason = Close.GOING_AWAY.code, Close.GOING_AWAY.reason
            self.conn.send_close(code, reason)
            self.transport.write(b"".join(self.conn.data_to_send()))
            self.close_sent = True
        super().shutdown()  # with the close sent: the keep-alive stopped, the transport closed
