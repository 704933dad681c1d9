// Connects the official TypeScript SDK client to one server of an
// editor's configuration, as the editor would start or reach it, and
// prints what it saw: the tools listed and the tasks list_tasks answers.
// cmd/workspaced/editors_test.go runs it with the server's entry, its
// variables already resolved:
//
//   node connect.mjs '{"type":"stdio","command":"workspaced","args":[...],"env":{...},"cwd":"..."}'
//   node connect.mjs '{"type":"http","url":"http://...","headers":{...}}'

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const spec = JSON.parse(process.argv[2] || "null");
if (!spec || (spec.type !== "stdio" && spec.type !== "http")) {
  console.error("usage: node connect.mjs SERVER_JSON (type stdio or http)");
  process.exit(2);
}

const transport =
  spec.type === "stdio"
    ? new StdioClientTransport({
        command: spec.command,
        args: spec.args || [],
        env: { ...process.env, ...(spec.env || {}) },
        cwd: spec.cwd,
        stderr: "pipe",
      })
    : new StreamableHTTPClientTransport(new URL(spec.url), { requestInit: { headers: spec.headers || {} } });

const client = new Client({ name: "editor-config", version: "0.0.0" });
try {
  await client.connect(transport);
  const { tools } = await client.listTools();
  const res = await client.callTool({ name: "list_tasks", arguments: {} });
  if (res.isError) {
    throw new Error(`list_tasks: ${res.content.map((c) => c.text).join("\n")}`);
  }
  const tasks = JSON.parse(res.content[0].text).map((t) => t.id);
  process.stdout.write(JSON.stringify({ tools: tools.map((t) => t.name), tasks }) + "\n");
  await client.close();
} catch (e) {
  console.error(e.stack || String(e));
  process.exit(1);
}
