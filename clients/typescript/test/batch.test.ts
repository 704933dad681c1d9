// WorkspacedStore's puts in batch requests (POST /api/v1/memory/batch)
// against the server: batch() sending its puts together, and concurrent
// puts coalesced, each caller answered its own result. Requests are
// counted by a fetch given to the client.
import { test } from "node:test";
import assert from "node:assert/strict";
import { InMemoryStore, type Operation } from "@langchain/langgraph-checkpoint";
import { WorkspacedClient, WorkspacedError } from "../src/index.js";
import { WorkspacedStore, type CoalesceOptions } from "../src/langgraph.js";
import { noServer, storeKind, token, url } from "./env.js";

const skip = noServer;

// counted is a store of agent name's token whose requests are counted,
// by method and path.
function counted(name = "alpha", coalesce?: false | CoalesceOptions) {
  const calls: string[] = [];
  const f: typeof fetch = (input, init) => {
    calls.push(`${init?.method ?? "GET"} ${new URL(String(input)).pathname}`);
    return globalThis.fetch(input, init);
  };
  const store = new WorkspacedStore({ client: new WorkspacedClient({ baseUrl: url, token: token(name), fetch: f }), coalesce });
  const count = (what: string) => calls.filter((c) => c === what).length;
  return { store, calls, count };
}

const BATCH = "POST /api/v1/memory/batch";
const PUT = "PUT /api/v1/memory/items";
// A namespace of this run's own.
const run = `${storeKind}-${process.pid}`;

test(`batch() sends its puts in one request and ends as InMemoryStore does (${storeKind})`, { skip }, async () => {
  const { store, calls } = counted();
  const mem = new InMemoryStore();
  const ns = ["bt", run, "batch"];
  const ops: Operation[] = [
    { namespace: ns, key: "a", value: { n: 1 } },
    { namespace: ns, key: "b", value: { n: 2, s: "é" } },
    { namespace: [...ns, "deeper"], key: "a", value: { n: 3 } },
    { namespace: ns, key: "a", value: { n: 4 } },
    { namespace: ns, key: "ключ", value: { n: 5 } },
  ];
  const got = await store.batch(ops);
  assert.deepEqual(calls, [BATCH], "five puts, one request");
  // InMemoryStore answers null to a put, ours undefined (as PostgresStore).
  assert.deepEqual(got, (await mem.batch(ops)).map((r) => (r === null ? undefined : r)));
  const shape = (xs: { namespace: string[]; key: string; value: unknown }[]) =>
    xs.map((i) => JSON.stringify([i.namespace, i.key, i.value])).sort();
  assert.deepEqual(shape(await store.search(ns, { limit: 100 })), shape(await mem.search(ns, { limit: 100 })));
  assert.equal((await store.get(ns, "a"))?.version, 2, "a's two puts, in order");
  // A delete keeps its own request and splits the run of puts.
  calls.length = 0;
  await store.batch([
    { namespace: ns, key: "c", value: { n: 6 } },
    { namespace: ns, key: "d", value: { n: 7 } },
    { namespace: ns, key: "a", value: null },
    { namespace: ns, key: "e", value: { n: 8 } },
    { namespace: ns, key: "e" },
  ]);
  assert.deepEqual(calls, [BATCH, "DELETE /api/v1/memory/items", PUT, "GET /api/v1/memory/items"]);
  assert.equal(await store.get(ns, "a"), null);
});

test("a put of batch() refused by its compare-and-set rejects the batch as its own PUT would", { skip }, async () => {
  const { store } = counted();
  const ns = ["bt", run, "cas"];
  await store.put(ns, "k", { n: 1 });
  let single: WorkspacedError | undefined;
  await store.putItem(ns, "k", { n: 0 }, { ifVersion: 9 }).catch((e) => (single = e));
  assert.ok(single instanceof WorkspacedError);
  await assert.rejects(
    store.batch([
      { namespace: ns, key: "x", value: { n: 2 } },
      { namespace: ns, key: "k", value: { n: 3 }, options: { ifVersion: 9 } } as Operation,
    ]),
    (e: unknown) => {
      assert.ok(e instanceof WorkspacedError);
      assert.equal(e.status, single!.status);
      assert.equal(e.kind, single!.kind);
      assert.equal(e.message, single!.message);
      assert.equal(e.currentVersion, 1);
      return true;
    },
  );
  // The other put of that request was written.
  assert.deepEqual((await store.get(ns, "x"))?.value, { n: 2 });
});

test(`100 concurrent puts on 20 keys: all written, each key's versions in call order, in fewer requests (${storeKind})`, { skip }, async () => {
  const { store, count } = counted();
  const ns = ["bt", run, "coalesce"];
  const got = await Promise.all(Array.from({ length: 100 }, (_, i) => store.putItem(ns, `k${i % 20}`, { i })));
  for (let i = 0; i < 100; i++) {
    assert.equal(got[i].key, `k${i % 20}`);
    assert.equal(got[i].version, Math.floor(i / 20) + 1, `put ${i}: the ${Math.floor(i / 20) + 1}th of its key`);
    assert.deepEqual(got[i].value, { i });
  }
  for (let k = 0; k < 20; k++) {
    const it = await store.get(ns, `k${k}`);
    assert.equal(it?.version, 5);
    assert.deepEqual(it?.value, { i: 80 + k }, "the last put called wins");
  }
  const requests = count(BATCH) + count(PUT);
  assert.ok(count(BATCH) > 0 && requests < 100, `${count(BATCH)} batch requests and ${count(PUT)} PUTs for 100 puts`);
});

test("a conflict or a bad value inside a coalesced batch rejects that put only", { skip }, async () => {
  const { store, count } = counted("alpha", { maxInFlight: 1 });
  const ns = ["bt", run, "mixed"];
  await store.put(ns, "cas", { n: 1 });
  const got = await Promise.allSettled([
    store.putItem(ns, "first", { n: 0 }),
    store.putItem(ns, "a", { n: 1 }, { ttlSeconds: 3600 }),
    store.putItem(ns, "cas", { n: 2 }, { ifVersion: 7 }),
    store.putItem(ns, "new", { n: 3 }, { ifAbsent: true }),
    store.putItem(ns, "cas", { n: 4 }, { ifVersion: 1 }),
  ]);
  assert.deepEqual(got.map((r) => r.status), ["fulfilled", "fulfilled", "rejected", "fulfilled", "fulfilled"]);
  assert.equal(count(BATCH), 1, "the four puts that waited went as one batch");
  const e = (got[2] as PromiseRejectedResult).reason;
  assert.ok(e instanceof WorkspacedError && e.isPreconditionFailed && e.currentVersion === 1, String(e));
  const a = (got[1] as PromiseFulfilledResult<{ expiresAt: Date | null }>).value;
  assert.ok(a.expiresAt && a.expiresAt.getTime() > Date.now() + 3000_000, "the TTL went with the batch");
  assert.equal((await store.get(ns, "cas"))?.version, 2);
  // A value the server refuses refuses the whole batch (400, nothing
  // written): its puts go again one by one, and only the bad one fails.
  const bad = await Promise.allSettled([
    store.putItem(ns, "b0", { n: 0 }),
    store.putItem(ns, "b1", { n: 1 }),
    store.putItem(ns, "b2", [1, 2] as unknown as Record<string, unknown>),
    store.putItem(ns, "b3", { n: 3 }),
  ]);
  assert.deepEqual(bad.map((r) => r.status), ["fulfilled", "fulfilled", "rejected", "fulfilled"]);
  const be = (bad[2] as PromiseRejectedResult).reason;
  assert.ok(be instanceof WorkspacedError && be.status === 400 && /object/.test(be.message), String(be));
  assert.deepEqual((await store.get(ns, "b3"))?.value, { n: 3 });
});

test("a token that may only read: every coalesced put rejects with 403", { skip }, async () => {
  const { store, count } = counted("reader", { maxInFlight: 1 });
  const got = await Promise.allSettled(Array.from({ length: 4 }, (_, i) => store.put(["bt", run, "ro"], `k${i}`, { i })));
  for (const r of got) {
    assert.equal(r.status, "rejected");
    const e = (r as PromiseRejectedResult).reason;
    assert.ok(e instanceof WorkspacedError && e.status === 403 && e.kind === "forbidden", String(e));
  }
  assert.equal(count(BATCH), 1);
});

test("WorkspacedClient.putMemoryItems: one result per put, a refused compare-and-set a 412 result with the current version", { skip }, async () => {
  const c = new WorkspacedClient({ baseUrl: url, token: token("alpha") });
  const ns = ["bt", run, "client"];
  const { results } = await c.putMemoryItems({
    body: {
      puts: [
        { namespace: ns, key: "a", value: { n: 1 } },
        { namespace: ns, key: "a", value: { n: 2 }, if_version: 1 },
        { namespace: ns, key: "a", value: { n: 3 }, if_version: 1 },
        { namespace: ns, key: "b", value: { n: 4 }, if_absent: true, ttl_seconds: 60 },
      ],
    },
  });
  assert.deepEqual(results.map((r) => r.status), [200, 200, 412, 200]);
  assert.deepEqual([results[0].item?.version, results[1].item?.version], [1, 2]);
  assert.equal(results[2].problem?.current_version, 2);
  assert.ok(results[3].item?.expires_at);
  // A bad put refuses the whole request, naming it, with nothing written.
  await assert.rejects(
    c.putMemoryItems({ body: { puts: [{ namespace: ns, key: "c", value: { n: 5 } }, { namespace: ns, key: "", value: {} }] } }),
    (e: unknown) => e instanceof WorkspacedError && e.status === 400 && /puts\[1\]/.test(e.message),
  );
  await assert.rejects(c.getMemoryItem({ query: { namespace: ns, key: "c" } }), (e: unknown) => e instanceof WorkspacedError && e.isNotFound);
});
