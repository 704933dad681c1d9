// WorkspacedStore as a LangGraph.js user meets it: put, get, search with
// filters, listNamespaces, TTL, compare-and-set, delete, and the refusals.
import { test } from "node:test";
import assert from "node:assert/strict";
import { BaseStore } from "@langchain/langgraph-checkpoint";
import { WorkspacedStore } from "../src/langgraph.js";
import { WorkspacedError } from "../src/index.js";
import { client, eventually, noServer, storeKind } from "./env.js";

const skip = noServer;

test(`a WorkspacedStore is a BaseStore and keeps items (${storeKind})`, { skip }, async () => {
  const store = new WorkspacedStore({ client: client() });
  assert.ok(store instanceof BaseStore);
  assert.equal(await store.get(["st", "users", "42"], "prefs"), null);
  await store.put(["st", "users", "42"], "prefs", { theme: "dark", size: 3 });
  const it = await store.get(["st", "users", "42"], "prefs");
  assert.ok(it);
  assert.deepEqual(it.namespace, ["st", "users", "42"]);
  assert.equal(it.key, "prefs");
  assert.deepEqual(it.value, { theme: "dark", size: 3 });
  assert.ok(it.createdAt instanceof Date && it.updatedAt instanceof Date);
  assert.equal((it as { version?: number }).version, 1);
  await store.put(["st", "users", "42"], "prefs", { theme: "light", size: 4 });
  const again = await store.get(["st", "users", "42"], "prefs");
  assert.equal((again as { version?: number }).version, 2);
  assert.deepEqual(again?.value, { theme: "light", size: 4 });
  assert.equal(again?.createdAt.getTime(), it.createdAt.getTime());
  await store.delete(["st", "users", "42"], "prefs");
  assert.equal(await store.get(["st", "users", "42"], "prefs"), null);
  // Deleting what is not there is no error, as in every LangGraph store.
  await store.delete(["st", "users", "42"], "prefs");
});

test("a search under a namespace never leaks into a sibling whose label starts the same", { skip }, async () => {
  const store = new WorkspacedStore({ client: client() });
  await store.put(["leak", "a", "b"], "k", { n: 1 });
  await store.put(["leak", "a", "bc"], "k", { n: 2 });
  await store.put(["leak", "a", "b", "c"], "k", { n: 3 });
  await store.put(["leak", "a:b"], "k", { n: 4 });
  const got = await store.search(["leak", "a", "b"], { limit: 100 });
  assert.deepEqual(got.map((i) => i.namespace), [["leak", "a", "b"], ["leak", "a", "b", "c"]]);
  const ns = await store.listNamespaces({ prefix: ["leak", "a", "b"] });
  assert.deepEqual(ns, [["leak", "a", "b"], ["leak", "a", "b", "c"]]);
  assert.deepEqual(await store.listNamespaces({ prefix: ["leak"], maxDepth: 2 }), [["leak", "a"], ["leak", "a:b"]]);
  assert.deepEqual(await store.listNamespaces({ prefix: ["leak", "*", "b"] }), [["leak", "a", "b"], ["leak", "a", "b", "c"]]);
  assert.deepEqual(await store.listNamespaces({ prefix: ["leak"], suffix: ["c"] }), [["leak", "a", "b", "c"]]);
});

test("search filters with $eq $ne $gt $gte $lt $lte, in namespace then key order, with limit and offset", { skip }, async () => {
  const store = new WorkspacedStore({ client: client() });
  for (let i = 0; i < 6; i++) {
    await store.put(["flt", i % 2 ? "odd" : "even"], `k${i}`, { n: i, s: `v${i}`, odd: i % 2 === 1 });
  }
  const keys = async (filter: Record<string, unknown>, limit = 10, offset = 0) =>
    (await store.search(["flt"], { filter, limit, offset })).map((i) => i.key);
  assert.deepEqual(await keys({}), ["k0", "k2", "k4", "k1", "k3", "k5"]);
  assert.deepEqual(await keys({ odd: true }), ["k1", "k3", "k5"]);
  assert.deepEqual(await keys({ n: { $eq: 2 } }), ["k2"]);
  assert.deepEqual(await keys({ n: { $ne: 2 } }), ["k0", "k4", "k1", "k3", "k5"]);
  assert.deepEqual(await keys({ n: { $gt: 3 } }), ["k4", "k5"]);
  assert.deepEqual(await keys({ n: { $gte: 3 } }), ["k4", "k3", "k5"]);
  assert.deepEqual(await keys({ n: { $lt: 2 } }), ["k0", "k1"]);
  assert.deepEqual(await keys({ n: { $lte: 2, $gt: 0 } }), ["k2", "k1"]);
  assert.deepEqual(await keys({ s: { $gte: "v4" } }), ["k4", "k5"]);
  // A comparison across types never matches; $ne does.
  assert.deepEqual(await keys({ s: { $gt: 1 } }), []);
  assert.deepEqual(await keys({ n: { $ne: "2" } }), ["k0", "k2", "k4", "k1", "k3", "k5"]);
  assert.deepEqual(await keys({}, 2, 3), ["k1", "k3"]);
  await assert.rejects(keys({ n: { $in: [1] } }), (e: unknown) => e instanceof WorkspacedError && e.status === 400 && /\$in/.test(e.message));
});

test("a semantic query is refused, saying why, before anything is sent", { skip }, async () => {
  let sent = 0;
  const c = client();
  const store = new WorkspacedStore({ client: c });
  const orig = c.request.bind(c);
  c.request = ((op: never, args: never) => {
    sent++;
    return orig(op, args);
  }) as typeof c.request;
  await assert.rejects(store.search(["st"], { query: "what does the user like?" }), (e: unknown) => {
    assert.ok(e instanceof WorkspacedError);
    assert.equal(e.kind, "invalid");
    assert.match(e.message, /no semantic search/);
    assert.match(e.message, /hint: search with filter/);
    return true;
  });
  await assert.rejects(store.batch([{ namespace: ["st"], key: "k", value: { a: 1 } }, { namespacePrefix: ["st"], query: "q" }]), /no semantic search/);
  assert.equal(sent, 0);
  assert.equal(await store.get(["st"], "k"), null);
});

test("compare-and-set: ifVersion and ifAbsent refuse with the current version", { skip }, async () => {
  const store = new WorkspacedStore({ client: client() });
  const first = await store.putItem(["cas"], "counter", { n: 1 }, { ifAbsent: true });
  assert.equal(first.version, 1);
  await assert.rejects(store.putItem(["cas"], "counter", { n: 9 }, { ifAbsent: true }), (e: unknown) => {
    assert.ok(e instanceof WorkspacedError);
    assert.equal(e.status, 412);
    assert.equal(e.currentVersion, 1);
    return true;
  });
  const second = await store.putItem(["cas"], "counter", { n: 2 }, { ifVersion: 1 });
  assert.equal(second.version, 2);
  await assert.rejects(store.put(["cas"], "counter", { n: 3 }, undefined, { ifVersion: 1 }), (e: unknown) =>
    e instanceof WorkspacedError && e.isPreconditionFailed && e.currentVersion === 2);
  await assert.rejects(store.delete(["cas"], "counter", { ifVersion: 1 }), (e: unknown) => e instanceof WorkspacedError && e.currentVersion === 2);
  // Two writers incrementing with compare-and-set lose no increment.
  const inc = async (s: WorkspacedStore) => {
    for (let done = 0; done < 10; ) {
      const cur = (await s.get(["cas"], "counter"))!;
      try {
        await s.putItem(["cas"], "counter", { n: (cur.value.n as number) + 1 }, { ifVersion: cur.version });
        done++;
      } catch (e) {
        if (!(e instanceof WorkspacedError && e.isPreconditionFailed)) throw e;
      }
    }
  };
  await Promise.all([inc(store), inc(new WorkspacedStore({ client: client("beta") }))]);
  assert.deepEqual((await store.get(["cas"], "counter"))?.value, { n: 22 });
  await store.delete(["cas"], "counter", { ifVersion: 22 });
  assert.equal(await store.get(["cas"], "counter"), null);
});

test("an item past its TTL is gone from get, search and listNamespaces", { skip }, async () => {
  const store = new WorkspacedStore({ client: client() });
  const it = await store.putItem(["ttl", "short"], "k", { a: 1 }, { ttlSeconds: 1 });
  assert.ok(it.expiresAt && it.expiresAt.getTime() > it.updatedAt.getTime());
  const kept = await store.putItem(["ttl", "long"], "k", { a: 2 }, { ttl: 60 });
  assert.ok(kept.expiresAt && kept.expiresAt.getTime() - kept.updatedAt.getTime() >= 3590_000);
  await store.put(["ttl", "none"], "k", { a: 3 });
  assert.equal((await store.get(["ttl", "none"], "k") as { expiresAt?: Date | null })?.expiresAt, null);
  await eventually("the item with a TTL of 1 s to expire", async () => (await store.get(["ttl", "short"], "k")) === null);
  assert.deepEqual((await store.search(["ttl"])).map((i) => i.namespace[1]), ["long", "none"]);
  assert.deepEqual(await store.listNamespaces({ prefix: ["ttl"] }), [["ttl", "long"], ["ttl", "none"]]);
});

test("a token that may only read the global memory reads and may not write", { skip }, async () => {
  const writer = new WorkspacedStore({ client: client() });
  const reader = new WorkspacedStore({ client: client("reader") });
  const outsider = new WorkspacedStore({ client: client("outsider") });
  await writer.put(["rights"], "k", { a: 1 });
  assert.deepEqual((await reader.get(["rights"], "k"))?.value, { a: 1 });
  await assert.rejects(reader.put(["rights"], "k", { a: 2 }), (e: unknown) => e instanceof WorkspacedError && e.status === 403 && e.kind === "forbidden");
  await assert.rejects(outsider.get(["rights"], "k"), (e: unknown) => e instanceof WorkspacedError && e.status === 403);
  assert.deepEqual((await writer.get(["rights"], "k"))?.value, { a: 1 });
});

test("bad namespaces and keys are refused by the server with its reason", { skip }, async () => {
  const store = new WorkspacedStore({ client: client() });
  const bad = async (p: Promise<unknown>, re: RegExp) =>
    assert.rejects(p, (e: unknown) => e instanceof WorkspacedError && e.status === 400 && e.kind === "invalid" && re.test(e.message));
  await bad(store.put([], "k", { a: 1 }), /namespace/);
  await bad(store.put(["a", ""], "k", { a: 1 }), /label/);
  await bad(store.put(["a\u0001"], "k", { a: 1 }), /control/);
  await bad(store.put([..."abcdefghijklmnopq"], "k", { a: 1 }), /16/);
  await bad(store.put(["a"], "", { a: 1 }), /key/);
  await bad(store.put(["a"], "k", [1, 2] as unknown as Record<string, unknown>), /object/);
  await assert.rejects(store.listNamespaces({ limit: 10 }).then(() => store.batch([{ matchConditions: [{ matchType: "prefix", path: ["a"] }, { matchType: "prefix", path: ["b"] }], limit: 10, offset: 0 }])), /one prefix at most/);
});

test("a batch runs in order: a get after a put sees it, reads between go at once", { skip }, async () => {
  const store = new WorkspacedStore({ client: client() });
  const res = await store.batch([
    { namespace: ["batch"], key: "a", value: { v: 1 } },
    { namespace: ["batch"], key: "a" },
    { namespacePrefix: ["batch"], limit: 10, offset: 0 },
    { matchConditions: [{ matchType: "prefix", path: ["batch"] }], limit: 10, offset: 0 },
    { namespace: ["batch"], key: "a", value: null },
    { namespace: ["batch"], key: "a" },
  ]);
  assert.deepEqual((res[1] as { value: unknown }).value, { v: 1 });
  assert.equal((res[2] as unknown[]).length, 1);
  assert.deepEqual(res[3], [["batch"]]);
  assert.equal(res[5], null);
});
