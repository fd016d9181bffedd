// Runs the client-side query cost function of docs/security/query-cost.md (written beside this
// file as query-cost.mjs by tests/graphql_api/frontend/test_query_cost_js.py):
//   node cost.mjs <schema.graphql> <cases.json>
// For each case ({query, variables}) it prints, as JSON, the function's cost of the document as
// written and of the document as Apollo Client sends it (its cache adds __typename to every
// selection set: addTypenameToDocument), with that document's text.
import { readFileSync } from "node:fs";
import { addTypenameToDocument } from "@apollo/client/utilities";
import { buildSchema, parse, print } from "graphql";
import { queryCost } from "./query-cost.mjs";

const [schemaPath, casesPath] = process.argv.slice(2);
const schema = buildSchema(readFileSync(schemaPath, "utf8"));
const cases = JSON.parse(readFileSync(casesPath, "utf8"));
const results = cases.map(({ query, variables }) => {
  const document = parse(query);
  const apollo = addTypenameToDocument(document);
  return {
    cost: queryCost(schema, document, variables ?? {}),
    apolloCost: queryCost(schema, apollo, variables ?? {}),
    apolloQuery: print(apollo),
  };
});
console.log(JSON.stringify(results));
