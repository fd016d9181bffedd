// A front end's subscription on urql's fetchExchange with fetchSubscriptions: true: over HTTP,
// no WebSocket (urql sends Accept: text/event-stream, multipart/mixed for a subscription).
// Run by tests/graphql_api/frontend/test_urql_subscriptions.py:
//   node subscribe.mjs <url> <token> <query> <variables JSON> <events> [<Accept header>]
// It prints one line per HTTP response ({"status", "contentType"}), one per result as it arrives
// ({"event": data}), then {"events": [...]} once <events> results arrived, or {"error": "..."}.
import { Client, fetchExchange } from "@urql/core";

const [url, token, query, variables, wanted, accept] = process.argv.slice(2);
const print = (line) => process.stdout.write(JSON.stringify(line) + "\n");

const headers = { Authorization: `Bearer ${token}`, ...(accept ? { accept } : {}) };
const client = new Client({
  url,
  exchanges: [fetchExchange],
  fetchSubscriptions: true,
  fetchOptions: { headers },
  fetch: async (...args) => {
    const response = await fetch(...args);
    print({ status: response.status, contentType: response.headers.get("content-type") });
    return response;
  },
});

const events = [];
const { unsubscribe } = client.subscription(query, JSON.parse(variables)).subscribe((result) => {
  if (result.error) {
    print({ error: String(result.error) });
    unsubscribe();
    process.exit(0);
  }
  events.push(result.data);
  print({ event: result.data });
  if (events.length >= Number(wanted)) {
    print({ events });
    unsubscribe();
    process.exit(0);
  }
});
