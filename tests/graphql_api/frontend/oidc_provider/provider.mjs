// One organisation's identity provider for the sign-in tests: panva's oidc-provider (a
// certified OpenID Provider), with its development login and consent pages.
//
//   node provider.mjs '<config JSON>'
//
// config: {"port": 0-65535, "clients": [{"client_id", "redirect_uris": [...]}],
//          "people": {"<login>": {"email": "...", "email_verified": true}}}
// The issuer is http://127.0.0.1:<port>. Any password signs a known login in; an unknown
// login is refused by the login page. Prints "ready <issuer>" once it listens.
import { generateKeyPairSync } from "node:crypto";
import Provider from "oidc-provider";

const config = JSON.parse(process.argv[2]);
const issuer = `http://127.0.0.1:${config.port}`;

// A signing key of its own, so two providers never share one.
const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
const signing = { ...privateKey.export({ format: "jwk" }), kid: `key-${config.port}`, alg: "ES256", use: "sig" };

const provider = new Provider(issuer, {
  clients: config.clients.map((client) => ({
    client_id: client.client_id,
    redirect_uris: client.redirect_uris,
    token_endpoint_auth_method: "none", // a public client: a browser app, PKCE instead of a secret
    grant_types: ["authorization_code"],
    response_types: ["code"],
    id_token_signed_response_alg: "ES256",
  })),
  jwks: { keys: [signing] },
  claims: { openid: ["sub"], email: ["email", "email_verified"] },
  // The ID token from the token endpoint carries the email claims (OIDC Core 5.4 lets a
  // provider put them there; most do).
  conformIdTokenClaims: false,
  cookies: { keys: ["test-only-cookie-key"] },
  features: { devInteractions: { enabled: true } },
  async findAccount(_ctx, id) {
    const person = config.people[id];
    if (person === undefined) return undefined;
    return {
      accountId: id,
      async claims() {
        return { sub: id, email: person.email, email_verified: person.email_verified };
      },
    };
  },
});
// The development login page accepts any login; only the configured people exist.
provider.on("server_error", (_ctx, error) => console.error("server_error", error));

provider.listen(config.port, "127.0.0.1", () => {
  console.log(`ready ${issuer}`);
});
