// WorkspacedSession as the OpenAI Agents SDK uses it: a Session whose items
// are a thread's session entries.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Agent, run, setTracingDisabled, type AgentInputItem, type Session } from "@openai/agents-core";
import { ScriptedModel, assistantMessage } from "@openai/agents-core/testing";
import { WorkspacedSession, WorkspacedError } from "../src/index.js";
import { converse } from "../examples/agents.js";
import { client, noServer, storeKind, task, token, url } from "./env.js";

setTracingDisabled(true);
const user = (text: string): AgentInputItem => ({ role: "user", content: text });
const text = (items: AgentInputItem[]) => items.map((i) => (i as { content: unknown }).content);

test(`getItems(limit) reads the latest items with their values in one request (${storeKind})`, { skip: noServer }, async () => {
  const requests: string[] = [];
  const counted: typeof fetch = (input, init) => {
    requests.push(`${init?.method ?? "GET"} ${String(input)}`);
    return fetch(input, init);
  };
  const session = new WorkspacedSession({ client: { baseUrl: url, token: token("alpha"), fetch: counted }, task, keyPrefix: "one." });
  await session.addItems([user("a"), user("b"), user("c"), user("d"), user("e")]);
  requests.length = 0;
  assert.deepEqual(text(await session.getItems(3)), ["c", "d", "e"]);
  assert.equal(requests.length, 1, requests.join("\n"));
  assert.match(requests[0], /^GET .*\/session\?prefix=one\.&last=3&values=true$/);
  await session.clearSession();
});

test(`a WorkspacedSession keeps items in order, answers the latest limit, pops and clears (${storeKind})`, { skip: noServer }, async () => {
  const session: Session = new WorkspacedSession({ client: client(), task, keyPrefix: "basic." });
  assert.equal(await session.getSessionId(), task);
  assert.deepEqual(await session.getItems(), []);
  assert.equal(await session.popItem(), undefined);
  await session.addItems([user("one"), user("two")]);
  await session.addItems([]);
  await session.addItems([user("three")]);
  assert.deepEqual(text(await session.getItems()), ["one", "two", "three"]);
  assert.deepEqual(text(await session.getItems(2)), ["two", "three"]);
  assert.deepEqual(text(await session.getItems(10)), ["one", "two", "three"]);
  assert.deepEqual(await session.getItems(0), []);
  assert.deepEqual(text([(await session.popItem())!]), ["three"]);
  assert.deepEqual(text(await session.getItems()), ["one", "two"]);
  await session.addItems([user("four")]);
  assert.deepEqual(text(await session.getItems()), ["one", "two", "four"]);

  // The thread's other session entries are its own: the session leaves them be.
  const c = client();
  await c.putSessionEntry({ path: { task, thread: task, key: "notes" }, body: { value: { kept: true } } });
  await session.clearSession();
  assert.deepEqual(await session.getItems(), []);
  assert.deepEqual((await c.getSessionEntry({ path: { task, thread: task, key: "notes" } })).value, { kept: true });

  // The items are entries anyone with the thread reads.
  await session.addItems([user("five")]);
  const list = await c.listSession({ path: { task, thread: task } });
  const e = list.entries.find((m) => m.key === "basic.000000000001");
  assert.ok(e, JSON.stringify(list.entries));
  assert.equal(e.stored_by, "alpha");
  assert.equal(e.short_description, "message from user");
  await session.clearSession();
});

test("a session on a task the token does not cover is refused with the reason", { skip: noServer }, async () => {
  const session = new WorkspacedSession({ client: client("outsider"), task, keyPrefix: "refused." });
  await assert.rejects(session.addItems([user("x")]), (e: unknown) =>
    e instanceof WorkspacedError && e.status === 403 && /may not work on task/.test(e.message) && /hint: /.test(e.message));
});

test("run() of an Agents SDK agent keeps its conversation in the workspace across two runs (the README's example)", { skip: noServer }, async () => {
  const first = new ScriptedModel([[assistantMessage("Hello, Ada.")]]);
  assert.deepEqual(await converse(client("alpha"), task, first, ["My name is Ada."]), ["Hello, Ada."]);
  // A second run, from another client as another process would be, with
  // a model that sees what the first run said.
  const second = new ScriptedModel([[assistantMessage("Your name is Ada.")]]);
  assert.deepEqual(await converse(client("beta"), task, second, ["What is my name?"]), ["Your name is Ada."]);
  const input = second.calls[0].request.input as AgentInputItem[];
  assert.ok(Array.isArray(input));
  const said = input.map((i) => JSON.stringify(i));
  assert.equal(said.length, 3, said.join("\n"));
  assert.match(said[0], /My name is Ada\./);
  assert.match(said[1], /Hello, Ada\./);
  assert.match(said[2], /What is my name\?/);
  const items = await new WorkspacedSession({ client: client("reader"), task }).getItems();
  assert.equal(items.length, 4);
  assert.match(JSON.stringify(items[3]), /Your name is Ada\./);
});

test("two processes adding 100 items each at once: 200 items, none lost or doubled, each process's in order", { skip: noServer, timeout: 300_000 }, async () => {
  const adder = fileURLToPath(new URL("./fixtures/adder.js", import.meta.url));
  const start = (name: string, tok: string) =>
    new Promise<void>((resolve, reject) => {
      const p = spawn(process.execPath, [adder, name, "100", "race."], {
        env: { ...process.env, WORKSPACED_URL: url, WORKSPACED_TASK: task, ADDER_TOKEN: tok },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let out = "";
      p.stdout.on("data", (d) => (out += d));
      p.stderr.on("data", (d) => (out += d));
      p.on("exit", (code) => (code === 0 && out.trim() === "done" ? resolve() : reject(new Error(`${name} exited ${code}: ${out}`))));
    });
  await Promise.all([start("alpha", token("alpha")), start("beta", token("beta"))]);
  const session = new WorkspacedSession({ client: client(), task, keyPrefix: "race." });
  const items = text(await session.getItems()) as string[];
  assert.equal(items.length, 200);
  assert.equal(new Set(items).size, 200, "an item was written twice");
  for (const name of ["alpha", "beta"]) {
    const mine = items.filter((s) => s.startsWith(`${name} `)).map((s) => Number(s.split(" ")[1]));
    assert.deepEqual(mine, Array.from({ length: 100 }, (_, i) => i), `${name}'s items, in the order it added them`);
  }
  assert.deepEqual(text(await session.getItems(7)), items.slice(-7));
  await session.clearSession();
});
