// How WorkspacedStore sends its puts where a workspaced server cannot be
// made to answer so: a batch refused whole (413, 400), a server without
// the batch route (404, 405), a batch failing otherwise (500), and
// coalescing turned off or mistuned. The server here is Node's own http
// server, keeping items in a map as the API does (version 1 on create, one
// more a put, If-Match and If-None-Match), the sockets real.
import { test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { WorkspacedClient, WorkspacedError } from "../src/index.js";
import { WorkspacedStore } from "../src/langgraph.js";

type Put = { namespace: string[]; key: string; value: Record<string, unknown>; if_version?: number; if_absent?: boolean };

// fake serves the memory items of the API, and the batch route as mode
// says: "ok" applies it, a number answers that status for every batch.
async function fake(mode: "ok" | 400 | 404 | 405 | 413 | 500) {
  const items = new Map<string, { version: number; value: unknown }>();
  const calls = { single: 0, batch: 0 };
  const problem = (res: http.ServerResponse, status: number, detail: string, current?: number) => {
    res.writeHead(status, { "Content-Type": "application/problem+json" });
    res.end(JSON.stringify({ type: "urn:workspaced:problem:x", title: "x", status, kind: status === 412 ? "conflict" : "invalid", detail, current_version: current }));
  };
  // apply puts p as a single PUT would: the item, or a status and why not.
  const apply = (p: Put): { status: number; item?: unknown; detail?: string; current?: number } => {
    if (p.value?.bad) return { status: 400, detail: `value: bad ${p.key}` };
    const k = JSON.stringify([p.namespace, p.key]);
    const have = items.get(k);
    if ((p.if_version !== undefined && have?.version !== p.if_version) || (p.if_absent && have)) {
      return { status: 412, detail: `${p.key}: version ${have?.version ?? 0}`, current: have?.version ?? 0 };
    }
    const version = (have?.version ?? 0) + 1;
    items.set(k, { version, value: p.value });
    const at = new Date().toISOString();
    return { status: 200, item: { namespace: p.namespace, key: p.key, value: p.value, version, created_at: at, updated_at: at, expires_at: null } };
  };
  const srv = http.createServer(async (req, res) => {
    let body = "";
    for await (const c of req) body += c;
    const u = new URL(req.url!, "http://x");
    if (req.method === "PUT" && u.pathname === "/api/v1/memory/items") {
      calls.single++;
      const m = /"(\d+)"/.exec(String(req.headers["if-match"] ?? ""));
      const r = apply({
        namespace: u.searchParams.getAll("namespace"),
        key: u.searchParams.get("key")!,
        value: JSON.parse(body).value,
        if_version: m ? Number(m[1]) : undefined,
        if_absent: req.headers["if-none-match"] === "*",
      });
      if (r.status !== 200) return problem(res, r.status, r.detail!, r.current);
      res.writeHead(200, { "Content-Type": "application/json" });
      return res.end(JSON.stringify(r.item));
    }
    if (req.method === "POST" && u.pathname === "/api/v1/memory/batch") {
      calls.batch++;
      if (mode === 404) return problem(res, 404, "no such route: POST /api/v1/memory/batch");
      if (mode !== "ok") return problem(res, mode, `the batch answered ${mode}`);
      const results = (JSON.parse(body).puts as Put[]).map((p) => {
        const r = apply(p);
        return r.status === 200 ? { status: 200, item: r.item } : { status: r.status, problem: { status: r.status, kind: "conflict", detail: r.detail, current_version: r.current } };
      });
      res.writeHead(200, { "Content-Type": "application/json" });
      return res.end(JSON.stringify({ results }));
    }
    problem(res, 404, `no such route: ${req.method} ${u.pathname}`);
  });
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
  return {
    calls,
    items,
    store: (coalesce?: false | { maxInFlight?: number; maxBatch?: number }) => new WorkspacedStore({ client: new WorkspacedClient({ baseUrl: url }), coalesce }),
    stop: () => {
      srv.closeAllConnections();
      return new Promise<void>((r) => srv.close(() => r()));
    },
  };
}

// putAll puts n items at once on keys k0…k(n-1), answering each put's result.
function putAll(s: WorkspacedStore, n: number, tag = "v") {
  return Promise.allSettled(Array.from({ length: n }, (_, i) => s.putItem(["w"], `k${i}`, { tag, i })));
}

test("with one request in flight, the puts that wait go as one batch request, each answered its item", async () => {
  const f = await fake("ok");
  try {
    const got = await putAll(f.store({ maxInFlight: 1 }), 10);
    assert.deepEqual(got.map((r) => r.status === "fulfilled" && r.value.key), Array.from({ length: 10 }, (_, i) => `k${i}`));
    assert.deepEqual(f.calls, { single: 1, batch: 1 });
  } finally {
    await f.stop();
  }
});

test("a put refused by its compare-and-set in a batch rejects as its own PUT would; the others are written", async () => {
  const f = await fake("ok");
  try {
    const s = f.store({ maxInFlight: 1 });
    await s.put(["w"], "cas", { n: 1 });
    const got = await Promise.allSettled([
      s.putItem(["w"], "first", { n: 0 }),
      s.putItem(["w"], "a", { n: 1 }),
      s.putItem(["w"], "cas", { n: 2 }, { ifVersion: 7 }),
      s.putItem(["w"], "b", { n: 3 }),
    ]);
    assert.deepEqual(got.map((r) => r.status), ["fulfilled", "fulfilled", "rejected", "fulfilled"]);
    const e = (got[2] as PromiseRejectedResult).reason;
    assert.ok(e instanceof WorkspacedError);
    assert.equal(e.status, 412);
    assert.equal(e.isPreconditionFailed, true);
    assert.equal(e.currentVersion, 1);
    assert.deepEqual(f.calls, { single: 2, batch: 1 });
  } finally {
    await f.stop();
  }
});

test("a batch refused with 413 or 400 sends its puts again one by one, each getting its own answer", async () => {
  for (const status of [413, 400] as const) {
    const f = await fake(status);
    try {
      const s = f.store({ maxInFlight: 1 });
      const got = await Promise.allSettled([
        s.putItem(["w"], "k0", { i: 0 }),
        s.putItem(["w"], "k1", { i: 1 }),
        s.putItem(["w"], "k2", { bad: true }),
        s.putItem(["w"], "k3", { i: 3 }),
      ]);
      assert.deepEqual(got.map((r) => r.status), ["fulfilled", "fulfilled", "rejected", "fulfilled"], `${status}`);
      const e = (got[2] as PromiseRejectedResult).reason;
      assert.ok(e instanceof WorkspacedError && e.status === 400 && /bad k2/.test(e.message), `${status}: ${e}`);
      assert.deepEqual(f.calls, { single: 4, batch: 1 }, `${status}`);
      // Not remembered: the next puts that wait go as a batch again.
      await putAll(s, 3);
      assert.equal(f.calls.batch, 2, `${status}`);
    } finally {
      await f.stop();
    }
  }
});

test("a server without the batch route (404, 405) is remembered: from then on every put goes on its own", async () => {
  for (const status of [404, 405] as const) {
    const f = await fake(status);
    try {
      const s = f.store({ maxInFlight: 1 });
      const first = await putAll(s, 6);
      assert.ok(first.every((r) => r.status === "fulfilled"), `${status}: ${JSON.stringify(first)}`);
      assert.deepEqual(f.calls, { single: 6, batch: 1 }, `${status}`);
      const again = await putAll(s, 6, "again");
      assert.ok(again.every((r) => r.status === "fulfilled" && r.value.version === 2), `${status}`);
      await s.batch([
        { namespace: ["w"], key: "x", value: { a: 1 } },
        { namespace: ["w"], key: "y", value: { a: 2 } },
      ]);
      assert.deepEqual(f.calls, { single: 14, batch: 1 }, `${status}`);
      assert.deepEqual(f.items.get(JSON.stringify([["w"], "y"]))?.value, { a: 2 });
    } finally {
      await f.stop();
    }
  }
});

test("any other failure of a batch request rejects every put of that request with it", async () => {
  const f = await fake(500);
  try {
    const got = await putAll(f.store({ maxInFlight: 1 }), 5);
    assert.equal(got[0].status, "fulfilled"); // on its own
    for (const r of got.slice(1)) {
      assert.equal(r.status, "rejected");
      const e = (r as PromiseRejectedResult).reason;
      assert.ok(e instanceof WorkspacedError && e.status === 500 && /the batch answered 500/.test(e.message), String(e));
    }
    assert.deepEqual(f.calls, { single: 1, batch: 1 });
    await assert.rejects(
      f.store(false).batch([
        { namespace: ["w"], key: "x", value: { a: 1 } },
        { namespace: ["w"], key: "y", value: { a: 2 } },
      ]),
      (e: unknown) => e instanceof WorkspacedError && e.status === 500,
    );
  } finally {
    await f.stop();
  }
});

test("coalesce: false sends every put on its own; batch() still sends its puts together", async () => {
  const f = await fake("ok");
  try {
    const s = f.store(false);
    const got = await putAll(s, 8);
    assert.ok(got.every((r) => r.status === "fulfilled"));
    assert.deepEqual(f.calls, { single: 8, batch: 0 });
    await s.batch(Array.from({ length: 250 }, (_, i) => ({ namespace: ["w", "many"], key: `k${i}`, value: { i } })));
    assert.deepEqual(f.calls, { single: 8, batch: 3 }, "250 puts: batch requests of 100, 100 and 50");
  } finally {
    await f.stop();
  }
});

test("puts of one key are applied in the order they were called, whatever is in flight", async () => {
  const f = await fake("ok");
  try {
    const s = f.store({ maxInFlight: 4, maxBatch: 3 });
    // 40 puts on 4 keys, each key's puts numbered in call order.
    const got = await Promise.all(Array.from({ length: 40 }, (_, i) => s.putItem(["w", "order"], `k${i % 4}`, { i })));
    for (let i = 0; i < 40; i++) assert.equal(got[i].version, Math.floor(i / 4) + 1, `put ${i}`);
    for (let k = 0; k < 4; k++) assert.deepEqual(f.items.get(JSON.stringify([["w", "order"], `k${k}`]))?.value, { i: 36 + k });
    assert.ok(f.calls.single + f.calls.batch < 40, JSON.stringify(f.calls));
  } finally {
    await f.stop();
  }
});

test("coalescing's options are checked", () => {
  const client = new WorkspacedClient({ baseUrl: "http://127.0.0.1:1" });
  assert.throws(() => new WorkspacedStore({ client, coalesce: { maxInFlight: 0 } }), /maxInFlight must be a whole number of 1 or more \(got 0\)/);
  assert.throws(() => new WorkspacedStore({ client, coalesce: { maxInFlight: 1.5 } }), /maxInFlight/);
  assert.throws(() => new WorkspacedStore({ client, coalesce: { maxBatch: 101 } }), /maxBatch must be a whole number from 1 to 100 \(got 101\)/);
  assert.throws(() => new WorkspacedStore({ client, coalesce: { maxBatch: 0 } }), /maxBatch/);
  assert.ok(new WorkspacedStore({ baseUrl: "http://127.0.0.1:1", coalesce: { maxInFlight: 3, maxBatch: 10 } }));
});
