// Side by side, in one run, on one PostgreSQL: a put and a get through the
// workspaced HTTP API from Node (WorkspacedStore) against LangGraph.js's
// PostgresStore in-process, and 8 and 16 concurrent writers of each (ours
// with its puts coalesced into batch requests, the default, and with
// coalescing off: one PUT a put, with the requests the coalesced run
// made); a put
// through MCP (the official SDK's client, put_memory_item) against the
// peer's put plus one MCP ping; and the floors a request from Node cannot
// go below: an HTTP round trip to the same listener that touches no store
// (/healthz), the same with the token's look-up (GET /api/v1/agent), and
// an MCP ping; and our put, get and writers once more with no token (the
// listener trusting loopback), to tell what the token's look-up costs.
// Beside ours and the peer's single put and get, a bare door's: a Go
// server doing no more than the peer's own statements (PUT and GET
// /items/NAMESPACE/KEY), reached the way the client's requests go: what
// any door in front of PostgreSQL costs, and what ours costs beyond it.
//
//   WORKSPACED_URL, WORKSPACED_TOKEN  the API listener and a token that
//                                     writes the global memory
//   WORKSPACED_MCP_URL                an `mcp --http` server's /mcp on the
//                                     same workspace (the token admitted)
//   BENCH_PG                          the database's URL (PostgresStore's
//                                     tables go in a schema of their own)
//   BENCH_OPS (400), BENCH_WRITERS (8,16: the writers of each burst),
//   BENCH_WRITES (50)
//   BENCH_IN_FLIGHT                   maxInFlight values to run the
//                                     writers with besides the default
//                                     ("1,2,4": one series each)
//   BENCH_TRANSPORT                   "fetch": the client and the floors
//                                     go through the global fetch, where
//                                     by default they take the client's
//                                     own (node:http on Node)
//   BENCH_BARE_URL, BENCH_BARE_SCHEMA the bare door and the schema of its
//                                     table (made here by the peer's own
//                                     setup, so of the peer's shape)
//   BENCH_BARE_PID                    the bare door's process (as
//                                     WORKSPACED_PID, for its CPU)
//   WORKSPACED_PID                    the listener's process: with it, on
//                                     Linux, each single put, get and
//                                     floor is broken down into the CPU
//                                     an operation of Node, the listener
//                                     and PostgreSQL (its server's
//                                     processes, found from BENCH_PG's
//                                     socket directory)
//
// The Go benchmark BenchmarkTypeScriptClientVsPostgresStore
// (cmd/workspaced) starts a PostgreSQL, a workspace on it and its listener,
// and runs this. It prints one JSON object.
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { PostgresStore } from "@langchain/langgraph-checkpoint-postgres/store";
import type { BaseStore } from "@langchain/langgraph-checkpoint";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { WorkspacedClient, type OperationId } from "../src/index.js";
import { WorkspacedStore } from "../src/langgraph.js";
import { defaultSend, viaFetch } from "../src/transport.js";

const ops = Number(process.env.BENCH_OPS ?? 400);
const writerCounts = (process.env.BENCH_WRITERS ?? "8,16").split(",").map(Number);
const writes = Number(process.env.BENCH_WRITES ?? 50);
const rounds = 5;

const transport = process.env.BENCH_TRANSPORT === "fetch" ? "fetch" : "default";
const globalFetch = transport === "fetch" ? globalThis.fetch.bind(globalThis) : undefined;
const inFlights = (process.env.BENCH_IN_FLIGHT ?? "").split(",").filter(Boolean).map(Number);
// Put requests (PUTs and batch requests) each client made, counted at its
// request(), which every method goes through.
const putRequests = new Map<WorkspacedClient, number>();
function counted(c: WorkspacedClient): WorkspacedClient {
  putRequests.set(c, 0);
  const request = c.request.bind(c);
  c.request = ((op: OperationId, args: never) => {
    if (op === "putMemoryItem" || op === "putMemoryItems") putRequests.set(c, putRequests.get(c)! + 1);
    return request(op, args);
  }) as typeof c.request;
  return c;
}
const tokened = () => new WorkspacedClient({ baseUrl: process.env.WORKSPACED_URL!, token: process.env.WORKSPACED_TOKEN!, fetch: globalFetch });
const ours = new WorkspacedStore({ client: counted(tokened()) });
// Coalescing off: every put its own PUT.
const single = new WorkspacedStore({ client: tokened(), coalesce: false });
// Coalescing with other maxInFlight values (BENCH_IN_FLIGHT).
const tuned = inFlights.map((maxInFlight) => ({
  maxInFlight,
  store: new WorkspacedStore({ client: counted(tokened()), coalesce: { maxInFlight } }),
}));
// The same client on the listener's trust of loopback, with no token (the
// agent named by Workspace-Agent): no token to look up, what a put or get
// would cost if the look-up took no round trip of its own.
const untokened = new WorkspacedStore({
  client: new WorkspacedClient({ baseUrl: process.env.WORKSPACED_URL!, agent: "bench", fetch: globalFetch }),
});
// The floors go the way the client's requests go.
const send = globalFetch ? viaFetch(globalFetch) : defaultSend();
const peer = PostgresStore.fromConnString(process.env.BENCH_PG!, { schema: `langgraph_bench_${process.pid}` });
await peer.setup();
// The bare door's table, made by the peer's setup in a schema of its own.
const bareTable = PostgresStore.fromConnString(process.env.BENCH_PG!, { schema: process.env.BENCH_BARE_SCHEMA! });
await bareTable.setup();
await bareTable.stop();
const mcp = new Client({ name: "bench", version: "0.0.0" });
await mcp.connect(
  new StreamableHTTPClientTransport(new URL(process.env.WORKSPACED_MCP_URL!), {
    requestInit: { headers: { Authorization: `Bearer ${process.env.WORKSPACED_TOKEN}` } },
  }),
);
async function mcpPut(ns: string[], key: string, v: object) {
  const res = await mcp.callTool({ name: "put_memory_item", arguments: { namespace: ns, key, value: v } });
  if (res.isError) throw new Error(`put_memory_item: ${JSON.stringify(res.content)}`);
}
const healthz = `${process.env.WORKSPACED_URL}/healthz`;
const whoAmI = `${process.env.WORKSPACED_URL}/api/v1/agent`;
const auth = { Authorization: `Bearer ${process.env.WORKSPACED_TOKEN}` };
async function floor() {
  const res = await send({ method: "GET", url: healthz, headers: {} });
  await res.text();
  if (res.status !== 200) throw new Error(`GET /healthz: ${res.status}`);
}
async function tokenFloor() {
  const res = await send({ method: "GET", url: whoAmI, headers: auth });
  await res.text();
  if (res.status !== 200) throw new Error(`GET /api/v1/agent: ${res.status}`);
}

// The bare door's put and get: the namespace joined as the peer joins it,
// the value as JSON text, the item's value parsed from the answer.
const bareItem = (ns: string[], key: string) =>
  `${process.env.BENCH_BARE_URL}/items/${encodeURIComponent(ns.join(":"))}/${encodeURIComponent(key)}`;
async function barePut(ns: string[], key: string, v: object) {
  const res = await send({ method: "PUT", url: bareItem(ns, key), headers: { "Content-Type": "application/json" }, body: JSON.stringify(v) });
  await res.text();
  if (res.status !== 200) throw new Error(`bare door PUT: ${res.status}`);
}
async function bareGet(ns: string[], key: string): Promise<unknown> {
  const res = await send({ method: "GET", url: bareItem(ns, key), headers: {} });
  const text = await res.text();
  if (res.status === 404) return null;
  if (res.status !== 200) throw new Error(`bare door GET: ${res.status}`);
  return JSON.parse(text);
}

const value = (i: number) => ({ i, text: `memory number ${i}`, tags: ["bench", "node"], score: i / 7 });

function stats(ms: number[]) {
  const s = [...ms].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))];
  return { n: s.length, median_ms: at(0.5), p95_ms: at(0.95), mean_ms: s.reduce((a, b) => a + b, 0) / s.length };
}

// The CPU each process spends, summed over a series' calls (µs): Node's
// own (process.cpuUsage), the listener's and PostgreSQL's from
// /proc/PID/task/*/schedstat (time on a CPU, in ns), where Linux and
// WORKSPACED_PID allow. PostgreSQL's processes are the children of the
// postmaster of BENCH_PG's socket directory (a pgtest cluster's data
// directory is beside its socket): every backend, ours and the peer's,
// and its writers.
const serverPid = Number(process.env.WORKSPACED_PID ?? 0);
const barePid = Number(process.env.BENCH_BARE_PID ?? 0);
const postmaster = (() => {
  try {
    // Not new URL(): a URL with a user and no host is not one to it.
    const host = /[?&]host=([^&]*)/.exec(process.env.BENCH_PG ?? "")?.[1];
    const dir = host && decodeURIComponent(host);
    return dir ? Number(readFileSync(`${dir}/data/postmaster.pid`, "utf8").split("\n")[0]) : 0;
  } catch {
    return 0;
  }
})();
function onCPU(pid: number): number {
  let ns = 0;
  try {
    for (const t of readdirSync(`/proc/${pid}/task`)) {
      ns += Number(readFileSync(`/proc/${pid}/task/${t}/schedstat`, "utf8").split(" ")[0]);
    }
  } catch {
    // gone meanwhile
  }
  return ns;
}
function pgOnCPU(): number {
  let ns = onCPU(postmaster);
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, "utf8");
      // pid (comm) state ppid …: the comm may hold spaces, the ppid follows its ")".
      if (Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === postmaster) ns += onCPU(Number(d));
    } catch {
      // gone meanwhile
    }
  }
  return ns;
}
const breaks = serverPid > 0 && postmaster > 0 && existsSync(`/proc/${serverPid}/task`);
type CPU = { calls: number; node: number; server: number; pg: number };
const cpuOf = new Map<string, CPU>();

// The server's CPU is process pid's: the listener's, or the bare door's.
async function timed(n: number, op: (i: number) => Promise<unknown>, from: number, name?: string, pid = serverPid): Promise<number[]> {
  const out: number[] = [];
  const before = name && breaks && pid > 0 ? { server: onCPU(pid), pg: pgOnCPU() } : undefined;
  const node = process.cpuUsage();
  for (let i = from; i < from + n; i++) {
    const t = performance.now();
    await op(i);
    out.push(performance.now() - t);
  }
  if (name && before) {
    const used = process.cpuUsage(node);
    const c = cpuOf.get(name) ?? { calls: 0, node: 0, server: 0, pg: 0 };
    c.calls += n;
    c.node += used.user + used.system;
    c.server += (onCPU(pid) - before.server) / 1000;
    c.pg += (pgOnCPU() - before.pg) / 1000;
    cpuOf.set(name, c);
  }
  return out;
}

// Warm both up: connections, prepared plans, the tables' first pages.
for (const s of [ours, peer, single, ...tuned.map((t) => t.store)] as BaseStore[]) {
  for (let i = 0; i < 50; i++) await s.put(["bench", "warm"], `w${i}`, value(i));
  for (let i = 0; i < 50; i++) await s.get(["bench", "warm"], `w${i}`);
}
for (let i = 0; i < 50; i++) await barePut(["bench", "warm"], `w${i}`, value(i));
for (let i = 0; i < 50; i++) await bareGet(["bench", "warm"], `w${i}`);
for (let i = 0; i < 50; i++) {
  await mcpPut(["bench", "warm"], `m${i}`, value(i));
  await mcp.ping();
  await floor();
  await tokenFloor();
}

// Puts then gets, in rounds that alternate who goes first, so drift of the
// machine falls on both alike.
const put = { ours: [] as number[], peer: [] as number[], bare: [] as number[], untokened: [] as number[] };
const get = { ours: [] as number[], peer: [] as number[], bare: [] as number[], untokened: [] as number[] };
const mcpTimes = { put: [] as number[], ping: [] as number[] };
const floorTimes: number[] = [];
const tokenFloorTimes: number[] = [];
const per = Math.ceil(ops / rounds);
for (let r = 0; r < rounds; r++) {
  // Each pair of the three swaps its order from one round to the next.
  const order = r % 2 ? (["bare", "peer", "ours"] as const) : (["ours", "peer", "bare"] as const);
  for (const who of order) {
    const pid = who === "bare" ? barePid : serverPid;
    const p =
      who === "bare"
        ? (i: number) => barePut(["bench", "seq"], `k${i}`, value(i))
        : (i: number) => (who === "ours" ? ours : peer).put(["bench", "seq"], `k${i}`, value(i));
    put[who].push(...(await timed(per, p, r * per, `put_${who}`, pid)));
  }
  for (const who of order) {
    const pid = who === "bare" ? barePid : serverPid;
    const g =
      who === "bare"
        ? (i: number) => bareGet(["bench", "seq"], `k${i}`)
        : (i: number) => (who === "ours" ? ours : peer).get(["bench", "seq"], `k${i}`);
    get[who].push(...(await timed(per, g, r * per, `get_${who}`, pid)));
  }
  put.untokened.push(...(await timed(per, (i) => untokened.put(["bench", "untokened"], `k${i}`, value(i)), r * per, "put_untokened")));
  get.untokened.push(...(await timed(per, (i) => untokened.get(["bench", "untokened"], `k${i}`), r * per, "get_untokened")));
  mcpTimes.put.push(...(await timed(per, (i) => mcpPut(["bench", "mcp"], `k${i}`, value(i)), r * per)));
  mcpTimes.ping.push(...(await timed(per, () => mcp.ping(), 0)));
  floorTimes.push(...(await timed(per, floor, 0, "http_floor")));
  tokenFloorTimes.push(...(await timed(per, tokenFloor, 0, "http_token_floor")));
}

// writers loops at once, each running op writes times (op(w, i)): ops a
// second over the whole burst.
async function rate(writers: number, op: (w: number, i: number) => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await Promise.all(
    Array.from({ length: writers }, async (_, w) => {
      for (let i = 0; i < writes; i++) await op(w, i);
    }),
  );
  return (writers * writes) / ((performance.now() - t) / 1000);
}
// A burst: writers writers at once, each putting items of its own.
const burst = (s: BaseStore, tag: string, writers: number) =>
  rate(writers, (w, i) => s.put(["bench", "writers", tag, `w${w}`], `k${i}`, value(i)));
// The floor of a burst: as many loops at once, each making as many HTTP
// round trips to the listener that touch no store (/healthz): the rate
// no writer through the door can pass.
const floorBurst = (writers: number) => rate(writers, floor);
const best = (xs: number[]) => Math.max(...xs);
// Three bursts of each, alternating who goes first; the best counts.
const bursts = writerCounts.map((writers) => {
  return {
    writers,
    ours: [] as number[],
    peer: [] as number[],
    single: [] as number[],
    floor: [] as number[],
    untokened: [] as number[],
    // The put requests of each of ours' runs, and this process's CPU in
    // each of ours' and single's runs (µs).
    requests: [] as number[],
    cpu: { ours: [] as number[], single: [] as number[] },
    tuned: tuned.map(() => ({ rates: [] as number[], requests: [] as number[] })),
  };
});
// A burst of store s, counting the requests of its client when counted.
async function countedBurst(s: WorkspacedStore, tag: string, writers: number, requests: number[]): Promise<number> {
  const before = putRequests.get(s.client) ?? 0;
  const r = await burst(s, tag, writers);
  requests.push((putRequests.get(s.client) ?? 0) - before);
  return r;
}
for (const b of bursts) {
  for (let r = 0; r < 3; r++) {
    const order = r % 2 ? (["peer", "ours", "single"] as const) : (["ours", "peer", "single"] as const);
    for (const who of order) {
      const tag = `${who}${b.writers}r${r}`;
      const cpu = process.cpuUsage();
      if (who === "ours") b.ours.push(await countedBurst(ours, tag, b.writers, b.requests));
      else b[who].push(await burst(who === "peer" ? peer : single, tag, b.writers));
      const used = process.cpuUsage(cpu);
      if (who !== "peer") b.cpu[who].push(used.user + used.system);
    }
    for (const [k, t] of tuned.entries()) {
      b.tuned[k].rates.push(await countedBurst(t.store, `inflight${t.maxInFlight}w${b.writers}r${r}`, b.writers, b.tuned[k].requests));
    }
    b.floor.push(await floorBurst(b.writers));
    b.untokened.push(await burst(untokened, `untokened${b.writers}r${r}`, b.writers));
  }
}
const last = bursts[bursts.length - 1];
// The requests of the best of a series' runs, and its items per request.
function perRequest(rates: number[], requests: number[], writers: number) {
  const n = requests[rates.indexOf(best(rates))];
  return { requests: n, items_per_request: (writers * writes) / n };
}

const result = {
  transport: globalFetch ? "fetch" : "node:http",
  put: { ours: stats(put.ours), peer: stats(put.peer), bare: stats(put.bare) },
  get: { ours: stats(get.ours), peer: stats(get.peer), bare: stats(get.bare) },
  // No token: what the token's look-up costs, by difference.
  untokened: { put: stats(put.untokened), get: stats(get.untokened) },
  mcp: { put: stats(mcpTimes.put), ping: stats(mcpTimes.ping) },
  http_floor: stats(floorTimes),
  http_token_floor: stats(tokenFloorTimes),
  // Each series' CPU a call, µs, by process (empty without WORKSPACED_PID
  // or /proc): where a single put's and get's time goes besides waiting.
  cpu_us_per_call: Object.fromEntries(
    [...cpuOf].map(([k, c]) => [k, { node: c.node / c.calls, server: c.server / c.calls, postgres: c.pg / c.calls }]),
  ),
  writers: bursts.map((b) => ({
    writers: b.writers,
    writes_each: writes,
    ours_items_per_s: best(b.ours),
    peer_items_per_s: best(b.peer),
    rate_ratio: best(b.ours) / best(b.peer),
    // ours' best run: the put requests it made for writers × writes items.
    ours_put_requests: perRequest(b.ours, b.requests, b.writers).requests,
    ours_items_per_request: perRequest(b.ours, b.requests, b.writers).items_per_request,
    // This process's CPU an item in the best run, µs: what the client
    // spends, coalesced and not.
    ours_cpu_us_per_item: b.cpu.ours[b.ours.indexOf(best(b.ours))] / (b.writers * writes),
    single_cpu_us_per_item: b.cpu.single[b.single.indexOf(best(b.single))] / (b.writers * writes),
    // Coalescing off: one PUT a put.
    single_items_per_s: best(b.single),
    single_rate_ratio: best(b.single) / best(b.peer),
    by_max_in_flight: tuned.map((t, k) => ({
      max_in_flight: t.maxInFlight,
      items_per_s: best(b.tuned[k].rates),
      rate_ratio: best(b.tuned[k].rates) / best(b.peer),
      ...perRequest(b.tuned[k].rates, b.tuned[k].requests, b.writers),
    })),
    // No store touched: the door's own rate, and its ratio to the peer's.
    floor_items_per_s: best(b.floor),
    floor_rate_ratio: best(b.floor) / best(b.peer),
    untokened_items_per_s: best(b.untokened),
  })),
  ratios: {
    put_median: stats(put.ours).median_ms / stats(put.peer).median_ms,
    get_median: stats(get.ours).median_ms / stats(get.peer).median_ms,
    writers_rate: best(last.ours) / best(last.peer),
    writers_rate_first: best(bursts[0].ours) / best(bursts[0].peer),
    // The same with coalescing off, and the coalesced run's items a request.
    writers_rate_single: best(last.single) / best(last.peer),
    writers_items_per_request: perRequest(last.ours, last.requests, last.writers).items_per_request,
    // MCP's put ÷ (the peer's put + an MCP ping): at most 1 is the target.
    mcp_put_vs_peer_plus_ping:
      stats(mcpTimes.put).median_ms / (stats(put.peer).median_ms + stats(mcpTimes.ping).median_ms),
    // What the door alone costs, beside the peer that has none: a put can
    // be no faster than the floor plus the peer's own put, a get than the
    // floor, a burst of writers than the floor's burst.
    put_floor: (stats(floorTimes).median_ms + stats(put.peer).median_ms) / stats(put.peer).median_ms,
    get_floor: stats(floorTimes).median_ms / stats(get.peer).median_ms,
    // A get through a server in front of PostgreSQL makes the peer's own
    // query as well: that round trip plus the peer's get, over its get.
    get_floor_with_query: (stats(floorTimes).median_ms + stats(get.peer).median_ms) / stats(get.peer).median_ms,
    writers_floor_rate: best(last.floor) / best(last.peer),
    // The bare door beside the peer: what any door in front of PostgreSQL
    // costs (past 1.5, the line is past any door); ours beside the bare
    // door: what is left to cut.
    bare_put_vs_peer: stats(put.bare).median_ms / stats(put.peer).median_ms,
    bare_get_vs_peer: stats(get.bare).median_ms / stats(get.peer).median_ms,
    put_vs_bare: stats(put.ours).median_ms / stats(put.bare).median_ms,
    get_vs_bare: stats(get.ours).median_ms / stats(get.bare).median_ms,
  },
};
console.log(JSON.stringify(result));
await mcp.close();
await peer.stop();
