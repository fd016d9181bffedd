// The urql exchanges of docs/api/front-end.md (written beside this file as auth-exchange.mjs
// by tests/graphql_api/frontend/test_auth_errors.py), running { me { email } } once:
//   node urql.mjs <url> <token> <token a refresh hands out, or "">
import { Client, fetchExchange } from "@urql/core";
import { authExchanges } from "./auth-exchange.mjs";
import { makeSession, report } from "./session.mjs";

const [url, token, fresh] = process.argv.slice(2);
const session = makeSession(token, fresh);
const client = new Client({ url, fetch: session.fetch, exchanges: [...authExchanges(session), fetchExchange] });
const { data, error } = await client.query("{ me { email } }", {}).toPromise();
report(session, data, error);
