// The client on a loopback listener that trusts its machine (no token:
// the agent is the one the client names), over a workspace no daemon
// serves, with a small rate per address: where it meets 503, 501 and 429.
import { test } from "node:test";
import assert from "node:assert/strict";
import { WorkspacedClient, WorkspacedError } from "../src/index.js";
import { options, task } from "./env.js";

const loop = process.env.WORKSPACED_LOOPBACK_URL ?? "";
const skip = loop
  ? false
  : "no loopback listener: WORKSPACED_LOOPBACK_URL is unset (go test ./clients -run TestTypeScriptClient starts one per store)";

test("a loopback listener without tokens acts as the agent the client names", { skip }, async () => {
  const c = new WorkspacedClient(options({ baseUrl: loop, agent: "local_1" }));
  const me = await c.whoAmI();
  assert.equal(me.agent, "local_1");
  assert.equal(me.token, "");
  await c.putEnvEntry({ path: { task, key: "from_loopback" }, body: { value: { n: 1 } } });
  const e = await c.getEnvEntry({ path: { task, key: "from_loopback" } });
  assert.deepEqual([e.value, e.stored_by], [{ n: 1 }, "local_1"]);
});

test("no daemon serving: a claim that would wait is a 503 not_serving, nothing dropped", { skip }, async () => {
  const c = new WorkspacedClient(options({ baseUrl: loop, agent: "local_1" }));
  await assert.rejects(c.claimSubtask({ path: { task }, body: { subtask: "s1", wait: "5s" } }), (err: unknown) => {
    assert.ok(err instanceof WorkspacedError, String(err));
    assert.equal(err.status, 503);
    assert.equal(err.kind, "not_serving");
    assert.match(err.hint ?? "", /\S/);
    return true;
  });
});

test("a method the API does not know: 501 not_implemented as problem+json", { skip }, async () => {
  const res = await fetch(`${loop}/api/v1/tasks`, { method: "PROPFIND", headers: { "Workspace-Agent": "local_1" } });
  assert.equal(res.status, 501);
  assert.match(res.headers.get("content-type") ?? "", /^application\/problem\+json/);
  const p = await res.json();
  assert.equal(p.kind, "not_implemented");
  assert.match(p.hint, /openapi\.json/);
});

test("over the address's rate: 429 too_many_requests when retries are spent, then served after Retry-After", { skip }, async () => {
  const hasty = new WorkspacedClient(options({ baseUrl: loop, agent: "local_1", retries: 0 }));
  let refused: WorkspacedError | undefined;
  for (let i = 0; i < 100 && !refused; i++) {
    try {
      await hasty.whoAmI();
    } catch (err) {
      if (!(err instanceof WorkspacedError && err.status === 429)) throw err;
      refused = err;
    }
  }
  assert.ok(refused, "100 requests at once from one address, none refused");
  assert.equal(refused.kind, "too_many_requests");
  // The default client waits out Retry-After and is served.
  const patient = new WorkspacedClient(options({ baseUrl: loop, agent: "local_1" }));
  assert.equal((await patient.whoAmI()).agent, "local_1");
});
