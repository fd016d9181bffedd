// A front end's request for a persisted document: it sends the id the client preset put on the
// document (`__meta__.hash`, in persisted-documents.json too), never the text. Compiled with tsc
// and run by tests/graphql_api/frontend/test_graphql_codegen.py: node client.js <url> <token>.
import type { TypedDocumentNode } from "@graphql-typed-document-node/core";
import { MeDocument } from "./gql/graphql";

declare const process: { argv: string[] };

type GraphQLResponse<TResult> = {
  data?: TResult | null;
  errors?: { message: string; extensions?: { code?: string } }[];
};

async function execute<TResult, TVariables>(
  url: string,
  token: string,
  document: TypedDocumentNode<TResult, TVariables>,
  variables?: TVariables,
): Promise<{ status: number; body: GraphQLResponse<TResult> }> {
  const documentId = (document as unknown as { __meta__: { hash: string } }).__meta__.hash;
  const response = await fetch(url, {
    method: "POST",
    headers: {
      "Content-Type": "application/json",
      Accept: "application/graphql-response+json",
      Authorization: `Bearer ${token}`,
    },
    body: JSON.stringify({ documentId, variables }),
  });
  return { status: response.status, body: (await response.json()) as GraphQLResponse<TResult> };
}

async function main(): Promise<void> {
  const [url, token] = process.argv.slice(2);
  const { status, body } = await execute(url, token, MeDocument);
  // Typed by the generated MeQuery: `me` may be null, `email` is a string.
  const email: string | undefined = body.data?.me?.email;
  console.log(JSON.stringify({ status, email, errors: body.errors ?? [] }));
}

void main();
