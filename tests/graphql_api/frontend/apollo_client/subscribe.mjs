// A front end's subscription on Apollo Client's HttpLink: Apollo's multipart subscriptions
// over HTTP (it sends Accept: multipart/mixed;subscriptionSpec=1.0 for a subscription).
// Run by tests/graphql_api/frontend/test_apollo_multipart_subscriptions.py:
//   node subscribe.mjs <url> <token> <query> <variables JSON> <events>
// It prints {"events": [...]} once <events> results arrived, or {"error": "..."}.
import { ApolloClient, HttpLink, InMemoryCache, gql } from "@apollo/client";

const [url, token, query, variables, wanted] = process.argv.slice(2);
const print = (line) => process.stdout.write(JSON.stringify(line) + "\n");

const client = new ApolloClient({
  link: new HttpLink({ uri: url, headers: { Authorization: `Bearer ${token}` } }),
  cache: new InMemoryCache(),
});

const events = [];
const subscription = client.subscribe({ query: gql(query), variables: JSON.parse(variables) }).subscribe({
  next: (result) => {
    if (result.error) {
      print({ error: String(result.error) });
      subscription.unsubscribe();
      process.exit(0);
    }
    events.push(result.data);
    if (events.length >= Number(wanted)) {
      print({ events });
      subscription.unsubscribe();
      process.exit(0);
    }
  },
  error: (error) => {
    print({ error: String(error) });
    process.exit(0);
  },
});
