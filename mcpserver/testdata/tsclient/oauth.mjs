// An agent that has nothing but an OAuth client, driven by the official
// TypeScript SDK client: it connects to `workspaced mcp --http` in OAuth
// resource-server mode with no token at all, and the SDK's own OAuth
// client finds the authorization server from the server's 401 and its
// Protected Resource Metadata, gets an access token for the server and
// retries. cmd/workspaced/mcp_oauth_test.go runs it:
//
//   node oauth.mjs credentials URL TASK ISSUER
//       the client credentials grant; $OAUTH_CLIENT is {"id","secret","scope"}
//   node oauth.mjs code URL TASK ISSUER
//       the authorization code grant with PKCE, as a desktop client does;
//       $OAUTH_CLIENT is {"id","redirect_uri"}. The browser's part is
//       scripted: the authorization URL is followed, through the
//       provider's login page, to the redirect that carries the code.
//
// It prints one JSON object on stdout with what it saw; a step that goes
// wrong throws, and the run exits 1 with the reason on stderr.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ClientCredentialsProvider } from "@modelcontextprotocol/sdk/client/auth-extensions.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";

const [mode, url, task, issuer] = process.argv.slice(2);
if (!["credentials", "code"].includes(mode) || !url || !task || !issuer) {
  console.error("usage: node oauth.mjs credentials|code URL TASK ISSUER");
  process.exit(2);
}
const creds = JSON.parse(process.env.OAUTH_CLIENT || "{}");
const endpoint = new URL(url);
endpoint.searchParams.set("task", task);

// codeProvider is a public client of the authorization code grant that
// keeps everything in memory and hands the authorization URL to the
// scripted browser.
class CodeProvider {
  constructor() {
    this.authorizationUrl = null;
  }
  get redirectUrl() {
    return creds.redirect_uri;
  }
  get clientMetadata() {
    return { client_name: "ts-oauth", redirect_uris: [creds.redirect_uri], grant_types: ["authorization_code"], response_types: ["code"], token_endpoint_auth_method: "none" };
  }
  clientInformation() {
    return { client_id: creds.id };
  }
  tokens() {
    return this._tokens;
  }
  saveTokens(t) {
    this._tokens = t;
  }
  redirectToAuthorization(u) {
    this.authorizationUrl = u;
  }
  saveCodeVerifier(v) {
    this._verifier = v;
  }
  codeVerifier() {
    return this._verifier;
  }
}

// browse follows redirects from u, as a browser would, until one leads to
// the redirect URI; it returns that URL's query.
async function browse(u) {
  const seen = [];
  for (let i = 0; i < 10; i++) {
    seen.push(new URL(u).pathname);
    if (u.startsWith(creds.redirect_uri)) return { query: new URL(u).searchParams, seen };
    const res = await fetch(u, { redirect: "manual" });
    const next = res.headers.get("location");
    if (!next) throw new Error(`${u}: ${res.status} without a redirect: ${await res.text()}`);
    u = new URL(next, u).toString();
  }
  throw new Error("too many redirects");
}

const out = { mode };
let provider, transport;
const client = new Client({ name: "ts-oauth", version: "0.0.0" });
if (mode === "credentials") {
  provider = new ClientCredentialsProvider({ clientId: creds.id, clientSecret: creds.secret, scope: creds.scope, expectedIssuer: issuer });
  transport = new StreamableHTTPClientTransport(endpoint, { authProvider: provider });
  await client.connect(transport);
} else {
  provider = new CodeProvider();
  transport = new StreamableHTTPClientTransport(endpoint, { authProvider: provider });
  try {
    await client.connect(transport);
    throw new Error("connected without authorizing");
  } catch (e) {
    if (!(e instanceof UnauthorizedError)) throw e;
  }
  const auth = new URL(provider.authorizationUrl);
  out.authorization = {
    resource: auth.searchParams.get("resource"),
    code_challenge_method: auth.searchParams.get("code_challenge_method"),
    scope: auth.searchParams.get("scope"),
  };
  const { query, seen } = await browse(auth.toString());
  out.browsed = seen;
  await transport.finishAuth(query.get("code"));
  transport = new StreamableHTTPClientTransport(endpoint, { authProvider: provider });
  await client.connect(transport);
}

const text = (res) => res.content.map((c) => c.text).join("\n");
out.tools = (await client.listTools()).tools.map((t) => t.name);
out.instructions = client.getInstructions() || "";
out.store = text(await client.callTool({ name: "store_env_data", arguments: { key: `from_ts_${mode}`, short_description: "d", value: 1 } }));
out.list = text(await client.callTool({ name: "list_env_data", arguments: {} }));
const plan = await client.callTool({ name: "write_plan", arguments: { subtasks: [] } });
out.plan = { text: text(plan), isError: !!plan.isError };
out.token_type = provider.tokens()?.token_type || "";
await client.close();
console.log(JSON.stringify(out));
