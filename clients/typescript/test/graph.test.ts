// A LangGraph.js StateGraph compiled with WorkspacedStore (the README's
// example, examples/langgraph.ts): two threads, each with its own graph,
// client and agent as two processes would have, write memories about one
// user and read each other's, through the workspace.
import { test } from "node:test";
import assert from "node:assert/strict";
import { WorkspacedStore } from "../src/langgraph.js";
import { rememberingGraph } from "../examples/langgraph.js";
import { client, noServer, storeKind } from "./env.js";

test(`two threads of a StateGraph share memories through WorkspacedStore (${storeKind})`, { skip: noServer }, async () => {
  const first = rememberingGraph(new WorkspacedStore({ client: client("alpha") }));
  const second = rememberingGraph(new WorkspacedStore({ client: client("beta") }));
  const user = `u${Date.now()}`;

  const a = await first.invoke({ user, said: "likes green tea" }, { configurable: { thread_id: "th-a" } });
  assert.deepEqual(a.recalled, ["th-a: likes green tea"]);

  const b = await second.invoke({ user, said: "works at night" }, { configurable: { thread_id: "th-b" } });
  assert.deepEqual(b.recalled, ["th-a: likes green tea", "th-b: works at night"]);

  // Thread a, a second turn, reads what thread b wrote.
  const a2 = await first.invoke({ user, said: "is learning Go" }, { configurable: { thread_id: "th-a" } });
  assert.deepEqual(a2.recalled, ["th-a: likes green tea", "th-a: is learning Go", "th-b: works at night"]);

  // Another user's memories are not mixed in, even one whose id starts alike.
  const other = await second.invoke({ user: `${user}0`, said: "hates tea" }, { configurable: { thread_id: "th-b" } });
  assert.deepEqual(other.recalled, ["th-b: hates tea"]);

  // The items are the workspace's: another store on the same server sees them.
  const items = await new WorkspacedStore({ client: client("reader") }).search(["users", user, "memories"], { limit: 100 });
  assert.deepEqual(items.map((i) => i.key), ["th-a.0", "th-a.2", "th-b.1"]);
});
