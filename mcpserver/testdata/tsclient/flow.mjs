// A planner, a reviewer and a worker that have nothing but MCP tools,
// driven by the official TypeScript SDK client: each a `workspaced mcp`
// process over stdio, or each a session of one `workspaced mcp --http`
// server over the Streamable HTTP transport, with its own bearer token.
// cmd/workspaced/mcp_ts_test.go runs it three times:
//
//   node flow.mjs before BIN ROOT TASK   before any daemon has seen the task
//   node flow.mjs flow BIN ROOT TASK     with `workspaced serve` running
//   node flow.mjs http URL - TASK        over HTTP, with `workspaced serve`
//                                        running; $MCP_TOKENS is a JSON
//                                        object of tokens by agent name
//   node flow.mjs workspace BIN ROOT TASK  `workspaced mcp` without a task
//
// Each run prints one JSON object on stdout with what it saw, for the Go
// test to check; a step that goes wrong throws, and the run exits 1 with
// the reason on stderr.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [mode, bin, root, task] = process.argv.slice(2);
if (!mode || !bin || !root || !task) {
  console.error("usage: node flow.mjs before|flow BIN ROOT TASK, or node flow.mjs http URL - TASK");
  process.exit(2);
}
// Over HTTP, bin is the endpoint's URL and each agent has a token.
const tokens = mode === "http" ? JSON.parse(process.env.MCP_TOKENS || "{}") : {};

// transport connects agent name: a `workspaced mcp` process, or a session
// of the HTTP endpoint with the agent's token (the task in the URL).
function transport(name, token = tokens[name]) {
  if (mode !== "http") {
    // In mode workspace the server is given no task: it serves them all.
    const on = mode === "workspace" ? [] : ["--task", task];
    return new StdioClientTransport({
      command: bin,
      args: ["--root", root, "mcp", ...on, "--agent", name],
      stderr: "pipe",
    });
  }
  const url = new URL(bin);
  url.searchParams.set("task", task);
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  return new StreamableHTTPClientTransport(url, { requestInit: { headers } });
}

// The deadline for one awaited condition: generous, for a loaded machine.
const DEADLINE_MS = 90_000;

class Agent {
  constructor(name) {
    this.name = name;
  }

  async connect(token) {
    this.transport = transport(this.name, token);
    this.client = new Client({ name: `ts-${this.name}`, version: "0.0.0" });
    await this.client.connect(this.transport);
    return this;
  }

  // try calls a tool and returns its text and whether it is a tool error.
  async try(tool, args = {}) {
    const res = await this.client.callTool({ name: tool, arguments: args });
    const text = res.content.map((c) => c.text).join("\n");
    return { text, isError: res.isError === true };
  }

  // call calls a tool that must succeed.
  async call(tool, args = {}) {
    const { text, isError } = await this.try(tool, args);
    if (isError) {
      throw new Error(`${this.name}: ${tool}(${JSON.stringify(args)}) failed: ${text}`);
    }
    return text;
  }

  async json(tool, args = {}) {
    return JSON.parse(await this.call(tool, args));
  }

  // until polls get_task_state until cond holds, as a model would.
  async until(what, cond) {
    const end = Date.now() + DEADLINE_MS;
    let last = "";
    while (Date.now() < end) {
      const { text, isError } = await this.try("get_task_state");
      last = text;
      if (!isError) {
        const st = JSON.parse(text);
        if (cond(st)) return st;
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error(`${this.name}: timed out waiting for ${what}; last get_task_state: ${last}`);
  }

  async close() {
    await this.client.close();
  }
}

// before: the tools as listed, and the errors a model meets first.
async function before() {
  const a = await new Agent("planner").connect();
  try {
    const { tools } = await a.client.listTools();
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    const out = {
      tools: tools.map((t) => t.name),
      scope_enum: byName.store_memory.inputSchema.properties.scope.enum,
      detail_enum: byName.get_delegation_context.inputSchema.properties.detail.enum,
      status_enum: byName.signal_done.inputSchema.properties.status.enum,
      task: await a.json("get_task"),
      errors: {},
    };
    const errors = {
      state_before_daemon: ["get_task_state", {}],
      memory_missing: ["get_memory", { key: "nope", scope: "session" }],
      memory_bad_scope: ["store_memory", { key: "k", value: 1, scope: "po" }],
      plan_missing: ["get_plan", {}],
      review_no_plan: ["write_review", { type: "plan_review", verdict: "approved" }],
      unknown_argument: ["get_task", { tusk: "other" }],
      other_task: ["get_task", { task: "other" }],
    };
    for (const [name, [tool, args]] of Object.entries(errors)) {
      const { text, isError } = await a.try(tool, args);
      out.errors[name] = { text, isError };
    }
    // A resource that is not there yet is a protocol error with a code.
    try {
      await a.client.readResource({ uri: `workspace://tasks/${task}/state` });
      out.state_resource = { code: null };
    } catch (e) {
      out.state_resource = { code: e.code, message: e.message };
    }
    return out;
  } finally {
    await a.close();
  }
}

// flow: the task from plan to completion.
async function flow() {
  const [planner, reviewer, worker] = await Promise.all(
    ["planner", "reviewer", "worker"].map((n) => new Agent(n).connect()),
  );
  const out = { steps: [] };
  const step = (s) => out.steps.push(s);
  try {
    const t = await planner.json("get_task");
    step(`planner read the task: ${t.description}`);
    const plan = {
      summary: "endpoints, then tests",
      subtasks: [
        { id: "st_1", description: "write the login endpoint", estimated_complexity: "low" },
        { id: "st_2", description: "write the tests", dependencies: ["st_1"] },
      ],
    };
    out.plan_v1 = await planner.call("write_plan", plan);

    await reviewer.until("plan v1 proposed", (st) => st.plan_status === "proposed" && st.plan_version === 1);
    const p1 = await reviewer.json("get_plan");
    step(`reviewer read plan v${p1.version} with ${p1.subtasks.length} subtasks`);
    out.review_v1 = await reviewer.call("write_review", {
      type: "plan_review",
      verdict: "revision_needed",
      issues: [{ problem: "no checkpoint before the tests", suggestion: "add one over st_2" }],
    });

    await planner.until("plan v1 sent back", (st) => st.plan_status === "revision_needed");
    const { reviews } = await planner.json("list_reviews");
    out.issue_seen = reviews[0].issues[0].problem;
    plan.checkpoints = [{ id: "cp_1", subtasks: ["st_2"] }];
    out.plan_v2 = await planner.call("write_plan", plan);

    await reviewer.until("plan v2 proposed", (st) => st.plan_status === "proposed" && st.plan_version === 2);
    out.review_v2 = await reviewer.call("write_review", { type: "plan_review", verdict: "approved" });
    await worker.until("executing", (st) => st.status === "executing");
    step("plan v2 approved");

    for (const id of ["st_1", "st_2"]) {
      await worker.until(`${id} pending`, (st) => st.subtasks[id].status === "pending");
      await worker.call("claim_subtask", { subtask_id: id });
      await worker.until(`${id} claimed`, (st) => st.subtasks[id].status === "in_progress" && st.subtasks[id].worker === "worker");
      const sub = await worker.json("get_subtask", { subtask_id: id });
      if (sub.status !== "in_progress" || sub.worker !== "worker") {
        throw new Error(`get_subtask ${id} after the claim: ${JSON.stringify(sub)}`);
      }
      if (id === "st_2") {
        out.st_1_output = await worker.json("get_output", { subtask_id: "st_1" });
      }
      await worker.call("signal_done", { subtask_id: id, output: { summary: `${id} done: POST /login`, decisions: ["bcrypt"] } });
      step(`worker finished ${id}`);
    }

    await reviewer.until("cp_1 awaiting review", (st) => st.checkpoints.cp_1?.status === "awaiting_review");
    out.review_cp = await reviewer.call("write_review", { type: "checkpoint_review", verdict: "approved", target: "cp_1" });
    out.final_state = await planner.until("completed", (st) => st.status === "completed");
    out.reviews = (await planner.json("list_reviews")).reviews.map((r) => `${r.id}:${r.type}:${r.verdict}:${r.reviewer}`);
    step("task completed");
    return out;
  } finally {
    await Promise.all([planner, reviewer, worker].map((a) => a.close()));
  }
}

// http: over Streamable HTTP, the tools as listed, what is refused, the
// whole flow with one token per agent, then every tool called once.
async function http() {
  const out = { refusals: {} };
  // Refused: no token, a token for another task.
  for (const [name, token] of [["no_token", ""], ["other_task", tokens.outsider]]) {
    try {
      await new Agent("outsider").connect(token ?? "");
      out.refusals[name] = "connected";
    } catch (e) {
      out.refusals[name] = String(e.message || e);
    }
  }
  const worker = await new Agent("worker").connect();
  try {
    const { tools } = await worker.client.listTools();
    out.tools = tools.map((t) => t.name);
    out.refusals.plan_without_right = await worker.try("write_plan", { subtasks: [{ id: "a", description: "b" }] });
    out.refusals.forged_agent = await worker.try("store_env_data", { key: "k", short_description: "d", value: 1, stored_by: "planner" });
    out.refusals.global_memory = await worker.try("store_memory", { key: "k", value: 1, scope: "global" });
  } finally {
    await worker.close();
  }
  Object.assign(out, await flow());
  // Every tool once, by an agent whose token holds every right.
  const all = await new Agent("all").connect();
  try {
    const calls = [
      ["store_env_data", { key: "ts_http", short_description: "from the TypeScript client", value: { n: 1 } }],
      ["get_env_data", { key: "ts_http" }],
      ["list_env_data", {}],
      ["update_env_data", { key: "ts_http", value: { n: 2 } }],
      ["delete_env_data", { key: "ts_http" }],
      ["store_memory", { key: "m", value: "x", scope: "global" }],
      ["get_memory", { key: "m", scope: "global" }],
      ["list_memory", {}],
      ["delete_memory", { key: "m", scope: "global" }],
      ["get_memory_history", { key: "m", scope: "global" }],
      ["put_memory_item", { namespace: ["users", "ü"], key: "prefs", value: { theme: "dark" }, ttl_seconds: 60 }],
      ["get_memory_item", { namespace: ["users", "ü"], key: "prefs" }],
      ["search_memory", { namespace_prefix: ["users"], filter: { theme: { $eq: "dark" } } }],
      ["list_memory_namespaces", { prefix: ["*"], max_depth: 1 }],
      ["delete_memory_item", { namespace: ["users", "ü"], key: "prefs", if_version: 1 }],
      ["get_task", {}],
      ["get_task_state", {}],
      ["get_plan", {}],
      ["get_subtask", { subtask_id: "st_1" }],
      ["get_output", { subtask_id: "st_1" }],
      ["list_reviews", {}],
      ["get_review", { review_id: "plan_v1" }],
      ["write_plan", { subtasks: [{ id: "x", description: "y" }] }],
      ["write_review", { type: "output_review", verdict: "approved", target: "st_1" }],
      ["claim_subtask", { subtask_id: "st_1" }],
      ["signal_done", { subtask_id: "st_9", output: { summary: "late" } }],
      ["get_delegation_context", {}],
      ["list_capabilities", {}],
      ["skills", {}],
      ["amend_plan", { add: [{ id: "late", description: "too late" }] }],
      ["list_tasks", {}],
      ["create_task", { description: "not this token's to make" }],
      ["get_context", { budget: 500 }],
    ];
    out.every = {};
    for (const [tool, args] of calls) {
      out.every[tool] = await all.try(tool, args);
    }
  } finally {
    await all.close();
  }
  return out;
}

// workspace: one server for the whole workspace, as an editor's config
// without a task starts it: the tasks listed, one created, and the task
// (or thread) named per call.
async function workspace() {
  const a = await new Agent("planner").connect();
  try {
    const { tools } = await a.client.listTools();
    const out = {
      tools: tools.map((t) => t.name),
      task_arg: Object.keys(tools.find((t) => t.name === "get_task").inputSchema.properties || {}),
      before: (await a.json("list_tasks")).map((t) => t.id),
      no_task: await a.try("get_task"),
    };
    const created = await a.json("create_task", { id: "t_new", description: "Made from an editor" });
    out.created = created.id;
    out.after = (await a.json("list_tasks")).map((t) => t.id);
    out.get_task = (await a.json("get_task", { task })).id;
    out.stored = await a.call("store_env_data", { task: "t_new", key: "k", short_description: "d", value: 1 });
    out.env = await a.json("list_env_data", { task: "t_new" });
    const ctx = await a.client.callTool({ name: "get_context", arguments: { task, budget: 1000 } });
    out.context = { task: ctx.structuredContent.task, budget: ctx.structuredContent.budget, text: ctx.content[0].text };
    return out;
  } finally {
    await a.close();
  }
}

const run = { before, flow, http, workspace }[mode];
if (!run) {
  console.error(`unknown mode ${mode}: use before, flow, http or workspace`);
  process.exit(2);
}
try {
  process.stdout.write(JSON.stringify(await run()) + "\n");
} catch (e) {
  console.error(e.stack || String(e));
  process.exit(1);
}
