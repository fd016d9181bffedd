// The Apollo Client 4 links of docs/api/front-end.md (written beside this file as auth-link.mjs
// by tests/graphql_api/frontend/test_auth_errors.py), running { me { email } } once:
//   node apollo.mjs <url> <token> <token a refresh hands out, or "">
import { ApolloClient, ApolloLink, HttpLink, InMemoryCache, gql } from "@apollo/client";
import { authLinks } from "./auth-link.mjs";
import { makeSession, report } from "./session.mjs";

const [url, token, fresh] = process.argv.slice(2);
const session = makeSession(token, fresh);
const link = ApolloLink.from([authLinks(session), new HttpLink({ uri: url, fetch: session.fetch })]);
const client = new ApolloClient({ link, cache: new InMemoryCache() });
let data = null;
let error = null;
try {
  ({ data, error } = await client.query({ query: gql("{ me { email } }"), fetchPolicy: "network-only" }));
} catch (thrown) {
  error = thrown;
}
report(session, data, error);
