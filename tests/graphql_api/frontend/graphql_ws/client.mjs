// A front end's subscription on the graphql-ws client (graphql-transport-ws), over Node's ws.
// Run by tests/graphql_api/frontend/test_graphql_ws.py:
//   node client.mjs <ws url> <token> <query> <variables JSON> <events>
// It connects with the token in connection_init's payload (as a browser must), subscribes, and
// prints one JSON line per protocol message it sends or receives ({"dir": "out"|"in", ...}),
// then {"events": [...]} once <events> results arrived, or {"closed": code, "reason": ...}
// when the server closes the socket, or {"error": [...]} when the subscription is refused.
import { createClient } from "graphql-ws";
import WebSocket from "ws";

const [url, token, query, variables, wanted] = process.argv.slice(2);
const print = (line) => process.stdout.write(JSON.stringify(line) + "\n");

// Every frame, both ways, for the test's transcript.
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

const client = createClient({
  url,
  webSocketImpl: RecordingWebSocket,
  connectionParams: { Authorization: `Bearer ${token}` },
  retryAttempts: 0,
  lazy: false,
  on: { closed: (event) => print({ closed: event.code, reason: event.reason }) },
});

const events = [];
client.subscribe(
  { query, variables: JSON.parse(variables) },
  {
    next: (result) => {
      events.push(result);
      if (events.length >= Number(wanted)) {
        print({ events });
        client.dispose();
      }
    },
    error: (error) => {
      print({ error: Array.isArray(error) ? error : String(error?.code ?? error) });
      client.dispose();
    },
    complete: () => {},
  },
);
