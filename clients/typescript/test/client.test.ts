// WorkspacedClient over the routes a program meets first: who it is, a
// task, entries with compare-and-set, global memory, and the task's events
// both as a cursor and as a stream that resumes; the transport (node:http
// on Node, or the fetch given: the Go test runs this file both ways), a
// request or a stream aborted, and HTTPS.
import { test } from "node:test";
import assert from "node:assert/strict";
import { WorkspacedClient, WorkspacedError } from "../src/index.js";
import { client, noServer, options, storeKind, task, tlsURL, token, transport, url } from "./env.js";

const skip = noServer;

test("the client's options are checked", () => {
  assert.throws(() => new WorkspacedClient({ baseUrl: "127.0.0.1:7070" }), /http:\/\/ or https:\/\//);
  assert.equal(new WorkspacedClient({ baseUrl: "http://h:1/api/v1/" }).baseUrl, "http://h:1");
});

test("a server that is not there is a network error with a hint", async () => {
  const c = new WorkspacedClient(options({ baseUrl: "http://127.0.0.1:1" }));
  await assert.rejects(c.whoAmI(), (e: unknown) => e instanceof WorkspacedError && e.kind === "network" && e.status === 0 && /hint: is the listener running/.test(e.message));
});

test(`whoAmI names the token's agent and its rights (${storeKind})`, { skip }, async () => {
  const me = await client("alpha").whoAmI();
  assert.equal(me.agent, "alpha");
  assert.deepEqual(me.tasks, [task]);
  assert.equal(me.global_memory, "write");
  assert.match(me.token, /^tk_/);
  assert.equal((await client("reader").whoAmI()).global_memory, "read");
});

test("a task and its env entries, with compare-and-set", { skip }, async () => {
  const c = client();
  const t = await c.getTask({ path: { task } });
  assert.equal(t.task.id, task);
  const put = await c.putEnvEntry({ path: { task, key: "client/é" }, body: { value: { grid: [[0, 1]] }, short_description: "a grid" } });
  assert.equal(put.entry.version, 1);
  assert.equal(put.entry.stored_by, "alpha");
  const got = await c.getEnvEntry({ path: { task, key: "client/é" } });
  assert.deepEqual(got.value, { grid: [[0, 1]] });
  await c.putEnvEntry({ path: { task, key: "client/é" }, header: { "If-Match": '"1"' }, body: { value: 2 } });
  await assert.rejects(c.putEnvEntry({ path: { task, key: "client/é" }, header: { "If-Match": '"1"' }, body: { value: 3 } }), (e: unknown) => {
    assert.ok(e instanceof WorkspacedError);
    assert.equal(e.status, 412);
    assert.equal(e.currentVersion, 2);
    return true;
  });
  await assert.rejects(c.putEnvEntry({ path: { task, key: "client/é" }, header: { "If-None-Match": "*" }, body: { value: 3 } }), (e: unknown) => e instanceof WorkspacedError && e.isPreconditionFailed);
  const list = await c.listEnv({ path: { task } });
  assert.ok(list.entries.some((m) => m.key === "client/é" && m.version === 2), JSON.stringify(list.entries));
  await c.deleteEnvEntry({ path: { task, key: "client/é" } });
  await assert.rejects(c.getEnvEntry({ path: { task, key: "client/é" } }), (e: unknown) => e instanceof WorkspacedError && e.isNotFound && e.kind === "not_found");
});

test("the global memory: written by one agent, read by another", { skip }, async () => {
  await client("alpha").putGlobalEntry({ path: { key: "style" }, body: { value: "concise" } });
  const e = await client("reader").getGlobalEntry({ path: { key: "style" } });
  assert.equal(e.value, "concise");
  assert.equal(e.stored_by, "alpha");
});

// polled reads again until ok holds (or ten seconds pass): on PostgreSQL an
// event is read once no transaction that began before it still runs
// anywhere in the cluster, so a poller may have to ask twice.
async function polled<T>(read: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
  let v = await read();
  for (let i = 0; i < 200 && !ok(v); i++) {
    await new Promise((r) => setTimeout(r, 50));
    v = await read();
  }
  return v;
}

test("a task's events: the cursor form and a stream that resumes where it stopped", { skip }, async () => {
  const c = client();
  const page = await c.taskEvents({ path: { task }, query: { after: 0, limit: 1000 } });
  const start = page.next;
  await c.putEnvEntry({ path: { task, key: "ev1" }, body: { value: 1 } });
  const after = await polled(
    () => c.taskEvents({ path: { task }, query: { after: start } }),
    (p) => p.events.some((e) => e.event === "env_stored"),
  );
  assert.ok(after.events.some((e) => e.event === "env_stored"), JSON.stringify(after.events));
  assert.ok(after.next > start);

  // The stream: read one event, stop, write another, resume after the first.
  const ac = new AbortController();
  let first: { end: number; event: string } | undefined;
  for await (const e of c.streamEvents(task, { after: start, signal: ac.signal })) {
    first = e;
    ac.abort();
  }
  assert.equal(first?.event, "env_stored");
  await c.putEnvEntry({ path: { task, key: "ev2" }, body: { value: 2 } });
  const ac2 = new AbortController();
  const names: string[] = [];
  for await (const e of c.streamEvents(task, { after: first!.end, signal: ac2.signal })) {
    names.push(`${e.event}:${e.attrs?.key ?? e.args?.join(",")}`);
    if (names.length === 1) ac2.abort();
  }
  assert.equal(names.length, 1);
  assert.match(names[0], /^env_stored:.*ev2/);
});

test("the memory feed: the cursor form, and a stream woken by a put made while it listens", { skip }, async () => {
  const c = client();
  const ns = ["feed", storeKind];
  const start = (await c.memoryEvents({ query: { after: 0, limit: 1000 } })).next;
  await c.putMemoryItem({ query: { namespace: ns, key: "one" }, body: { value: { n: 1 } } });
  const page = await polled(
    () => c.memoryEvents({ query: { after: start } }),
    (p) => p.events.length > 0,
  );
  assert.deepEqual(page.events.map((e) => [e.event, e.attrs?.key, e.attrs?.agent]), [["memory_stored", "one", "alpha"]]);
  const ac = new AbortController();
  const got: string[] = [];
  for await (const e of c.streamMemoryEvents({ after: start, signal: ac.signal })) {
    got.push(`${e.event}:${e.attrs?.key}`);
    if (got.length === 1) await c.deleteMemoryItem({ query: { namespace: ns, key: "one" } });
    if (got.length === 2) ac.abort();
  }
  assert.deepEqual(got, ["memory_stored:one", "memory_deleted:one"]);
});

test("request reaches any operation by its id", { skip }, async () => {
  const c = new WorkspacedClient(options({ baseUrl: url }));
  const d = (await c.request("getOpenAPI")) as unknown as { openapi: string };
  assert.equal(d.openapi, "3.1.0");
});

test(`the transport: ${transport}, the global fetch used only when given`, { skip }, async () => {
  const global = globalThis.fetch;
  let calls = 0;
  globalThis.fetch = (input, init) => {
    calls++;
    return global(input, init);
  };
  try {
    const c = client();
    assert.equal((await c.whoAmI()).agent, "alpha");
    await c.putGlobalEntry({ path: { key: "transport" }, body: { value: transport } });
    assert.equal((await c.getGlobalEntry({ path: { key: "transport" } })).value, transport);
  } finally {
    globalThis.fetch = global;
  }
  assert.equal(calls, transport === "fetch" ? 3 : 0);
});

test("an aborted request rejects with the signal's reason; an aborted stream ends", { skip }, async () => {
  const c = client();
  const ac = new AbortController();
  ac.abort(new Error("stopped by the caller"));
  await assert.rejects(c.whoAmI({ signal: ac.signal }), /stopped by the caller/);
  // Aborted in flight: sent, no answer read yet (that takes a turn of the event loop).
  const inFlight = new AbortController();
  const sent = c.listMemoryNamespaces({ body: { limit: 100, offset: 0 }, signal: inFlight.signal });
  inFlight.abort(new DOMException("too slow", "TimeoutError"));
  await assert.rejects(sent, (e: unknown) => e instanceof DOMException && e.name === "TimeoutError");
  // A stream waiting for an event that does not come: the signal ends it,
  // with no error, and the client is served again at once.
  const next = (await c.taskEvents({ path: { task }, query: { after: 0, limit: 1000 } })).next;
  const started = Date.now();
  const got = [];
  for await (const e of c.streamEvents(task, { after: next, signal: AbortSignal.timeout(300) })) got.push(e);
  assert.deepEqual(got, []);
  assert.ok(Date.now() - started < 5000, `the stream ended ${Date.now() - started} ms later`);
  assert.equal((await c.whoAmI()).agent, "alpha");
});

test("over HTTPS: the same answers and errors", { skip: skip || (tlsURL ? false : "no HTTPS listener: WORKSPACED_TLS_URL is unset") }, async () => {
  const c = new WorkspacedClient(options({ baseUrl: tlsURL, token: token("alpha") }));
  assert.equal((await c.whoAmI()).agent, "alpha");
  await c.putMemoryItem({ query: { namespace: ["tls", transport], key: "k" }, body: { value: { é: 1 } } });
  assert.deepEqual((await c.getMemoryItem({ query: { namespace: ["tls", transport], key: "k" } })).value, { é: 1 });
  await assert.rejects(c.getMemoryItem({ query: { namespace: ["tls", transport], key: "none" } }), (e: unknown) => e instanceof WorkspacedError && e.isNotFound && e.kind === "not_found");
  const stranger = new WorkspacedClient(options({ baseUrl: tlsURL, token: "tk_nobody" }));
  await assert.rejects(stranger.whoAmI(), (e: unknown) => e instanceof WorkspacedError && e.status === 401 && !!e.hint);
});
