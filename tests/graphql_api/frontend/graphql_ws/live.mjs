// A front end's subscription on the graphql-ws client with its defaults: retrying as it does
// by itself (no retryAttempts of ours), re-sending the subscription's payload as first given.
// Run by tests/graphql_api/frontend/graphql_ws_client.py:
//   node live.mjs <config JSON>
// config: {url, token | tokenFile, payload, events}: the credential goes in connection_init
// (read again from tokenFile at each connection, as an app gets a fresh token); ``payload``
// is the subscribe payload exactly as sent (a documentId beside an empty query, say).
// It prints one JSON line per frame sent or received ({"dir": "out"|"in", "frame": ...}), per
// socket event ({"connecting": n}, {"connected": n}, {"closed": code, "reason": ...}), per
// result ({"next": ...}), then {"events": [...]} once <events> results arrived, or
// {"error": ...} when the subscription ends in an error.
import { readFileSync } from "node:fs";
import { createClient } from "graphql-ws";
import WebSocket from "ws";

const config = JSON.parse(process.argv[2]);
const print = (line) => process.stdout.write(JSON.stringify(line) + "\n");

class RecordingWebSocket extends WebSocket {
  constructor(...args) {
    super(...args);
    this.on("message", (data) => print({ dir: "in", frame: JSON.parse(String(data)) }));
  }
  send(data) {
    print({ dir: "out", frame: JSON.parse(String(data)) });
    super.send(data);
  }
}

const token = () => (config.tokenFile ? readFileSync(config.tokenFile, "utf8").trim() : config.token);
let connections = 0;
const client = createClient({
  url: config.url,
  webSocketImpl: RecordingWebSocket,
  connectionParams: () => ({ Authorization: `Bearer ${token()}` }),
  lazy: false,
  on: {
    connecting: () => print({ connecting: ++connections }),
    connected: () => print({ connected: connections }),
    closed: (event) => print({ closed: event.code, reason: event.reason }),
  },
});

const events = [];
client.subscribe(config.payload, {
  next: (result) => {
    events.push(result);
    print({ next: result });
    if (events.length >= config.events) {
      print({ events });
      client.dispose();
    }
  },
  error: (error) => {
    print({ error: Array.isArray(error) ? error : { code: error?.code, reason: error?.reason, message: String(error) } });
    client.dispose();
  },
  complete: () => print({ complete: true }),
});
