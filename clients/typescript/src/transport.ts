// How a request reaches the server. On Node, when the caller passes no
// fetch, through node:http / node:https with a keep-alive agent: a loopback
// round trip costs about half of what Node's fetch costs. Everywhere else
// (browsers, edge runtimes, Deno, Bun, or a fetch passed in) through fetch.
// node:http is imported on first use, never at the top, so that bundlers
// and runtimes without it load the client untouched.

/** One request, as the client makes it. */
export interface Outgoing {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
}

/**
 * An answer, read the same way over either transport: its status, its
 * headers by name (any case), and its body once, as text or as chunks. A
 * body that breaks while it is read throws a TypeError, as fetch's does.
 */
export interface Answer {
  readonly status: number;
  header(name: string): string | null;
  text(): Promise<string>;
  chunks(): AsyncIterable<Uint8Array>;
  /** Drops the body unread. */
  discard(): void;
}

export type Send = (req: Outgoing) => Promise<Answer>;

/** The fetch transport: fetch's Response as an Answer. */
export function viaFetch(f: typeof fetch): Send {
  return async (req) => {
    const res = await f(req.url, { method: req.method, headers: req.headers, body: req.body, signal: req.signal });
    return {
      status: res.status,
      header: (name) => res.headers.get(name),
      text: () => res.text(),
      chunks: () => (res.body ?? emptyBody()) as unknown as AsyncIterable<Uint8Array>,
      discard: () => void res.body?.cancel().catch(() => {}),
    };
  };
}

async function* emptyBody(): AsyncGenerator<Uint8Array> {}

/** Whether this runtime is Node itself (not Deno or Bun, whose fetch is their own). */
export function isNode(): boolean {
  const g = globalThis as { process?: { versions?: Record<string, string | undefined> }; Deno?: unknown };
  return typeof g.process?.versions?.node === "string" && !g.process.versions.bun && g.Deno === undefined;
}

/** The transport a client uses when the caller passed no fetch. */
export function defaultSend(): Send {
  return isNode() ? viaNodeHTTP() : viaFetch(globalThis.fetch.bind(globalThis));
}

// The slice of node:http and node:https the transport uses, typed here so
// that the package's declarations need no @types/node.
interface NodeIncoming extends AsyncIterable<Uint8Array> {
  statusCode?: number;
  headers: Record<string, string | string[] | undefined>;
  resume(): void;
  destroy(err?: Error): void;
  on(ev: "error", fn: (err?: Error) => void): void;
  on(ev: "data", fn: (chunk: Uint8Array) => void): void;
  once(ev: "end" | "close", fn: () => void): void;
}
interface NodeRequest {
  reusedSocket: boolean;
  on(ev: "response", fn: (res: NodeIncoming) => void): NodeRequest;
  on(ev: "error", fn: (err: Error & { code?: string }) => void): NodeRequest;
  end(body?: string): void;
  destroy(err?: unknown): void;
}
interface NodeHTTP {
  Agent: new (opts: { keepAlive: boolean; timeout?: number }) => unknown;
  request(url: string, opts: { method: string; headers: Record<string, string>; agent: unknown }): NodeRequest;
}

// The node:http and node:https modules and their keep-alive agents, loaded
// once, on the first request of any client.
type NodeModules = { http: NodeHTTP; https: NodeHTTP; agents: { http: unknown; https: unknown } };
let nodeModules: Promise<NodeModules> | undefined;
let loaded: NodeModules | undefined;

function loadNode() {
  // A specifier bundlers do not follow (nor warn of): the client must load
  // where node:http does not exist.
  const spec = (name: string) => `node:${name}`;
  nodeModules ??= Promise.all([
    import(/* webpackIgnore: true */ /* @vite-ignore */ spec("http")),
    import(/* webpackIgnore: true */ /* @vite-ignore */ spec("https")),
  ]).then(([http, https]) => {
    const h = (http.default ?? http) as NodeHTTP;
    const s = (https.default ?? https) as NodeHTTP;
    // A socket idle this long is closed (undici's default): a server that
    // closes idle connections does so later than this.
    const opts = { keepAlive: true, timeout: 4000 };
    loaded = { http: h, https: s, agents: { http: new h.Agent(opts), https: new s.Agent(opts) } };
    return loaded;
  });
  return nodeModules;
}

// Methods the transport sends again when a kept-alive socket turns out to
// have been closed by the server before it read the request (RFC 9110
// 9.2.2: only idempotent ones).
const idempotent = new Set(["GET", "HEAD", "PUT", "DELETE", "OPTIONS"]);

/** The node:http transport. */
export function viaNodeHTTP(): Send {
  return (req) => nodeSend(req, true);
}

async function nodeSend(req: Outgoing, again: boolean): Promise<Answer> {
  const m = loaded ?? (await loadNode());
  const tls = req.url.startsWith("https:");
  const mod = tls ? m.https : m.http;
  const headers = { ...req.headers };
  if (req.body !== undefined) headers["Content-Length"] = String(Buffer.byteLength(req.body));
  const signal = req.signal;
  if (signal?.aborted) throw signal.reason;
  return new Promise<Answer>((resolve, reject) => {
    const r = mod.request(req.url, { method: req.method, headers, agent: tls ? m.agents.https : m.agents.http });
    let answered = false;
    const onAbort = () => r.destroy(signal!.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    const done = () => signal?.removeEventListener("abort", onAbort);
    r.on("error", (err) => {
      if (answered) return; // the body's reader sees it
      done();
      if (signal?.aborted) return reject(signal.reason);
      if (again && r.reusedSocket && idempotent.has(req.method) && (err.code === "ECONNRESET" || err.code === "EPIPE")) {
        return resolve(nodeSend(req, false));
      }
      reject(new TypeError(err.message, { cause: err }));
    });
    r.on("response", (res) => {
      answered = true;
      res.on("error", () => {}); // read by the body's reader; unread, nothing to tell
      res.once("close", done);
      resolve(nodeAnswer(res, signal));
    });
    r.end(req.body);
  });
}

function nodeAnswer(res: NodeIncoming, signal?: AbortSignal): Answer {
  let taken = false;
  const take = () => {
    if (taken) throw new TypeError("the body of this answer was already read");
    taken = true;
  };
  async function* chunks(): AsyncGenerator<Uint8Array> {
    take();
    try {
      for await (const c of res) yield c;
    } catch (err) {
      if (signal?.aborted) throw signal.reason;
      throw new TypeError("terminated", { cause: err }); // as fetch: a broken body
    }
  }
  return {
    status: res.statusCode ?? 0,
    header(name) {
      const v = res.headers[name.toLowerCase()];
      return v === undefined ? null : Array.isArray(v) ? v.join(", ") : v;
    },
    // The whole body by its events: cheaper than through chunks' async
    // iterator, on the path of every request.
    text() {
      take();
      return new Promise<string>((resolve, reject) => {
        const parts: Uint8Array[] = [];
        res.on("data", (c) => parts.push(c));
        res.on("error", (err) => reject(signal?.aborted ? signal.reason : new TypeError("terminated", { cause: err })));
        res.once("end", () => resolve((parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts)).toString("utf8")));
        res.once("close", () => reject(signal?.aborted ? signal.reason : new TypeError("terminated"))); // after end: a no-op
      });
    },
    chunks,
    discard() {
      if (taken) return;
      taken = true;
      res.resume();
    },
  };
}
