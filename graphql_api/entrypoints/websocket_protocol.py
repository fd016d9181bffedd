"""uvicorn's WebSocket protocol, closing sockets at shutdown the way our docs and clients expect.

At SIGTERM uvicorn closes every open WebSocket itself, before the app's lifespan ends (so
before the live hub could say anything), with 1012 and no reason. A client would reconnect
on either, but what the server says when it stops is one thing, documented
(docs/api/subscriptions.md): 1001 with the reason of Close.GOING_AWAY (closing.py), the
same the hub sends. Only the close frame differs from uvicorn's own shutdown; the rest
(the app told the socket is gone, the transport closed) is uvicorn's.
"""

from __future__ import annotations

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

from graphql_api.subscriptions.closing import Close

# For ``uvicorn.run(ws=...)``, in this process or imported by a spawned worker.
WEBSOCKET_PROTOCOL = "graphql_api.entrypoints.websocket_protocol:GoingAwayProtocol"


class GoingAwayProtocol(WebSocketsSansIOProtocol):
    def shutdown(self) -> None:
        if self.handshake_complete and not self.close_sent:
            code, reason = Close.GOING_AWAY.code, Close.GOING_AWAY.reason
            self.queue.put_nowait({"type": "websocket.disconnect", "code": code, "reason": reason})
            self.conn.send_close(code, reason)
            self.transport.write(b"".join(self.conn.data_to_send()))
            self.close_sent = True
        super().shutdown()  # with the close sent: the keep-alive stopped, the transport closed
