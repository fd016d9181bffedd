// A front end on Apollo Client with its automatic persisted queries link, as Apollo documents it.
// Run by tests/graphql_api/frontend/test_apollo_persisted_queries.py:
//   node client.mjs <url> <token or ""> <query> <runs> <get: "get" or "post">
// It runs the query <runs> times (never from the cache) and prints, as JSON, each run's data and
// every HTTP exchange the link made: whether it sent the text, its status and error codes.
import { ApolloClient, HttpLink, InMemoryCache, gql } from "@apollo/client";
import { PersistedQueryLink } from "@apollo/client/link/persisted-queries";
import { createHash } from "node:crypto";

const [url, token, query, runs, method] = process.argv.slice(2);
const exchanges = [];

async function recordingFetch(input, init) {
  const requestUrl = new URL(typeof input === "string" ? input : input.url);
  const body = init?.body ? JSON.parse(init.body) : null;
  const sentText = body ? "query" in body : requestUrl.searchParams.has("query");
  const response = await fetch(input, init);
  const answer = await response.clone().json();
  exchanges.push({
    method: init?.method ?? "GET",
    sentText,
    status: response.status,
    codes: (answer.errors ?? []).map((error) => error.extensions?.code ?? null),
  });
  return response;
}

const persisted = new PersistedQueryLink({
  sha256: (text) => createHash("sha256").update(text).digest("hex"),
  useGETForHashedQueries: method === "get",
});
const http = new HttpLink({
  uri: url,
  fetch: recordingFetch,
  headers: token ? { Authorization: `Bearer ${token}` } : {},
});
const client = new ApolloClient({ link: persisted.concat(http), cache: new InMemoryCache() });

const results = [];
for (let i = 0; i < Number(runs); i += 1) {
  const { data, error } = await client.query({ query: gql(query), fetchPolicy: "network-only" });
  results.push({ data: data ?? null, error: error ? String(error) : null });
}
console.log(JSON.stringify({ results, exchanges }));
