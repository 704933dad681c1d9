// The OpenAPI document: valid OpenAPI 3.1 by a validator from npm, served
// as kept in the repository, every operation a method of the client; and
// every error the API documents answers application/problem+json.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { Validator } from "@seriousme/openapi-schema-validator";
import { WorkspacedClient } from "../src/index.js";
import { routes } from "../src/generated/openapi.js";
import { noServer, task, token, url } from "./env.js";

const docPath = fileURLToPath(new URL("../../../../api/openapi.json", import.meta.url));
type Op = { operationId: string; responses: Record<string, unknown>; parameters?: unknown[] };
type Doc = { openapi: string; paths: Record<string, Record<string, Op>>; components: { schemas: { Problem: { properties: { kind: { enum: string[] } } } } } };

async function doc(): Promise<Doc> {
  return JSON.parse(await readFile(docPath, "utf8"));
}

test("api/openapi.json is a valid OpenAPI 3.1 document", async () => {
  const d = await doc();
  const v = new Validator();
  const res = await v.validate(d as unknown as Record<string, unknown>);
  assert.equal(v.version, "3.1");
  assert.ok(res.valid, JSON.stringify(res.errors, null, 2));
  // And the validator does refuse a broken one.
  const broken = structuredClone(d) as unknown as { paths: Record<string, unknown> };
  broken.paths["/api/v1/broken"] = { get: { responses: "none" } };
  assert.equal((await new Validator().validate(broken)).valid, false);
});

test("every operation of the document is a method of WorkspacedClient", async () => {
  const d = await doc();
  const ops: string[] = [];
  for (const item of Object.values(d.paths)) for (const op of Object.values(item)) if (op?.operationId) ops.push(op.operationId);
  assert.ok(ops.length > 30, `${ops.length} operations`);
  assert.deepEqual(Object.keys(routes).sort(), [...ops].sort(), "src/generated/openapi.ts is the document's (npm run generate)");
  const c = new WorkspacedClient({ baseUrl: "http://127.0.0.1:1" });
  for (const op of ops) assert.equal(typeof (c as unknown as Record<string, unknown>)[op], "function", op);
});

test("the server serves the document kept in the repository, valid", { skip: noServer }, async () => {
  const served = await new WorkspacedClient({ baseUrl: url }).getOpenAPI();
  assert.deepEqual(served, await doc());
});

type Case = {
  op: string;
  method: string;
  path: string;
  tok?: string | null;
  headers?: Record<string, string>;
  body?: string;
  status: number;
};

// The requests that provoke each documented error. 429 needs a rate limit
// set, 503 a wait with no daemon serving, 501 a method the API does not
// know: loopback.test.ts provokes them on a listener set up for it.
function cases(d: Doc): Case[] {
  const t = `/api/v1/tasks/${task}`;
  const ns = "/api/v1/memory/items?namespace=errs&key=k";
  const json = (v: unknown) => JSON.stringify(v);
  const cs: Case[] = [];
  // No token: every operation but the document itself is 401.
  for (const [p, item] of Object.entries(d.paths)) {
    for (const [m, op] of Object.entries(item)) {
      if (!op?.operationId || op.operationId === "getOpenAPI") continue;
      const path = p.replace(/\{task\}/g, task).replace(/\{[^}]+\}/g, "x") + (p.endsWith("/memory/items") ? "?namespace=a&key=k" : "");
      cs.push({ op: op.operationId, method: m.toUpperCase(), path, tok: null, status: 401, body: m === "get" || m === "delete" ? undefined : "{}" });
    }
  }
  cs.push(
    { op: "whoAmI", method: "GET", path: "/api/v1/agent", tok: "wsd_not_a_token", status: 401 },
    { op: "getTask", method: "GET", path: t, tok: "outsider", status: 403 },
    { op: "listEnv", method: "GET", path: `${t}/env`, tok: "outsider", status: 403 },
    { op: "putMemoryItem", method: "PUT", path: ns, tok: "outsider", body: json({ value: { a: 1 } }), status: 403 },
    { op: "putGlobalEntry", method: "PUT", path: "/api/v1/memory/global/k", tok: "reader", body: json({ value: 1 }), status: 403 },
    { op: "whoAmI", method: "GET", path: "/api/v1/agent", headers: { "Workspace-Agent": "mallory" }, status: 403 },
    { op: "getEnvEntry", method: "GET", path: `${t}/env/missing`, status: 404 },
    { op: "getMemoryItem", method: "GET", path: "/api/v1/memory/items?namespace=errs&key=missing", status: 404 },
    { op: "deleteMemoryItem", method: "DELETE", path: "/api/v1/memory/items?namespace=errs&key=missing", status: 404 },
    { op: "getOutput", method: "GET", path: `${t}/outputs/st_9`, status: 404 },
    { op: "getTask", method: "GET", path: "/api/v1/tasks/bad%20id", status: 400 },
    { op: "putEnvEntry", method: "PUT", path: `${t}/env/k`, body: "{not json", status: 400 },
    { op: "putEnvEntry", method: "PUT", path: `${t}/env/k`, body: json({ value: 1, extra: true }), status: 400 },
    { op: "searchMemory", method: "POST", path: "/api/v1/memory/search", body: json({ limit: 1001 }), status: 400 },
    { op: "searchMemory", method: "POST", path: "/api/v1/memory/search", body: json({ filter: { n: { $regex: "x" } } }), status: 400 },
    { op: "listMemoryNamespaces", method: "POST", path: "/api/v1/memory/namespaces", body: json({ max_depth: 17 }), status: 400 },
    { op: "getMemoryItem", method: "GET", path: "/api/v1/memory/items?key=k", status: 400 },
    { op: "createTask", method: "POST", path: "/api/v1/tasks", tok: "admin", body: json({ id: task, description: "again" }), status: 409 },
    { op: "putEnvEntry", method: "PUT", path: `${t}/env/errs`, headers: { "If-Match": '"99"' }, body: json({ value: 1 }), status: 412 },
    { op: "putMemoryItem", method: "PUT", path: ns, headers: { "If-None-Match": "*" }, body: json({ value: { a: 2 } }), status: 412 },
    { op: "deleteMemoryItem", method: "DELETE", path: ns, headers: { "If-Match": '"99"' }, status: 412 },
    { op: "putEnvEntry", method: "PUT", path: `${t}/env/big`, body: json({ value: "x".repeat(2 << 20) }), status: 413 },
    { op: "putEnvEntry", method: "PUT", path: `${t}/env/k`, headers: { "Content-Type": "text/plain" }, body: json({ value: 1 }), status: 415 },
  );
  return cs;
}

test("every documented error answers application/problem+json with the kind, the detail and the status", { skip: noServer }, async () => {
  const d = await doc();
  const kinds = d.components.schemas.Problem.properties.kind.enum;
  const byId = new Map<string, Op>();
  for (const item of Object.values(d.paths)) for (const op of Object.values(item)) if (op?.operationId) byId.set(op.operationId, op);
  // What the 412 cases compare with.
  const alpha = new WorkspacedClient({ baseUrl: url, token: token("alpha") });
  await alpha.putEnvEntry({ path: { task, key: "errs" }, body: { value: 1 } });
  await alpha.putMemoryItem({ query: { namespace: ["errs"], key: "k" }, body: { value: { a: 1 } } });
  const seen = new Set<number>();
  for (const c of cases(d)) {
    const what = `${c.op}: ${c.method} ${c.path.slice(0, 80)}`;
    const headers: Record<string, string> = { Accept: "application/json", ...c.headers };
    const tok = c.tok === undefined ? "alpha" : c.tok;
    if (tok) headers.Authorization = `Bearer ${tok.startsWith("wsd_") ? tok : token(tok)}`;
    if (c.body !== undefined && !headers["Content-Type"]) headers["Content-Type"] = "application/json";
    const res = await fetch(url + c.path, { method: c.method, headers, body: c.body });
    const text = await res.text();
    assert.equal(res.status, c.status, `${what}: ${text}`);
    assert.match(res.headers.get("content-type") ?? "", /^application\/problem\+json/, what);
    const p = JSON.parse(text);
    assert.equal(p.status, res.status, what);
    assert.ok(kinds.includes(p.kind), `${what}: kind ${p.kind}`);
    assert.equal(p.type, `urn:workspaced:problem:${p.kind}`, what);
    assert.ok(typeof p.title === "string" && p.title, what);
    assert.ok(typeof p.detail === "string" && p.detail.length > 5, what);
    const op = byId.get(c.op)!;
    assert.ok(String(c.status) in op.responses, `${what}: ${c.status} is not among the documented answers ${Object.keys(op.responses)}`);
    if (c.status === 412) assert.equal(typeof p.current_version, "number", what);
    if (c.status === 401) assert.ok(res.headers.get("www-authenticate"), `${what}: no WWW-Authenticate`);
    seen.add(c.status);
  }
  assert.deepEqual([...seen].sort(), [400, 401, 403, 404, 409, 412, 413, 415]);
});
