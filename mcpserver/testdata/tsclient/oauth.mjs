// An agent that has nothing but an OAuth client's credentials, driven by
// the official TypeScript SDK client: it connects to `workspaced mcp
// --http` in OAuth resource-server mode with no token at all, and the
// SDK's own OAuth client (client credentials grant) finds the
// authorization server from the server's 401 and its Protected Resource
// Metadata, gets an access token for the server and retries.
// cmd/workspaced/mcp_oauth_test.go runs it:
//
//   node oauth.mjs URL TASK ISSUER    $OAUTH_CLIENT is {"id","secret","scope"}
//
// It prints one JSON object on stdout with what it saw; a step that goes
// wrong throws, and the run exits 1 with the reason on stderr.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ClientCredentialsProvider } from "@modelcontextprotocol/sdk/client/auth-extensions.js";

const [url, task, issuer] = process.argv.slice(2);
if (!url || !task || !issuer) {
  console.error("usage: node oauth.mjs URL TASK ISSUER");
  process.exit(2);
}
const creds = JSON.parse(process.env.OAUTH_CLIENT || "{}");

const provider = new ClientCredentialsProvider({
  clientId: creds.id,
  clientSecret: creds.secret,
  scope: creds.scope,
  expectedIssuer: issuer,
});
const endpoint = new URL(url);
endpoint.searchParams.set("task", task);
const client = new Client({ name: "ts-oauth", version: "0.0.0" });
await client.connect(new StreamableHTTPClientTransport(endpoint, { authProvider: provider }));

const text = (res) => res.content.map((c) => c.text).join("\n");
const out = { tools: (await client.listTools()).tools.map((t) => t.name) };
out.instructions = client.getInstructions() || "";
out.store = text(await client.callTool({ name: "store_env_data", arguments: { key: "from_ts", short_description: "d", value: 1 } }));
out.list = text(await client.callTool({ name: "list_env_data", arguments: {} }));
const plan = await client.callTool({ name: "write_plan", arguments: { subtasks: [] } });
out.plan = { text: text(plan), isError: !!plan.isError };
out.token_type = provider.tokens()?.token_type || "";
await client.close();
console.log(JSON.stringify(out));
