// graphql-sse's own client in distinct connections mode (one request per operation, Accept:
// text/event-stream). Run by tests/graphql_api/frontend/test_graphql_sse.py:
//   node client.mjs <url> <token> <query> <variables JSON> <events>
// It prints each protocol message it receives ({"message": {"event", "data"}}), then
// {"events": [...]} once <events> results arrived, or {"completed": [...results]} when the
// server completed the operation first, or {"error": "..."}.
import { createClient } from "graphql-sse";

const [url, token, query, variables, wanted] = process.argv.slice(2);
const print = (line) => process.stdout.write(JSON.stringify(line) + "\n");

const client = createClient({
  url,
  singleConnection: false,
  headers: { Authorization: `Bearer ${token}` },
  retryAttempts: 0,
  on: { message: (message) => print({ message }) },
});

const results = [];
const dispose = client.subscribe(
  { query, variables: JSON.parse(variables) },
  {
    next: (result) => {
      results.push(result);
      if (results.length >= Number(wanted)) {
        print({ events: results });
        dispose();
        process.exit(0);
      }
    },
    error: (error) => {
      print({ error: String(error?.message ?? error), status: error?.response?.status });
      process.exit(0);
    },
    complete: () => {
      print({ completed: results });
      process.exit(0);
    },
  },
);
