// How a request reaches the server. On Node, when the caller passes no
// fetch: an http: URL through HTTP/1.1 written and read here on node:net
// sockets kept alive, an https: one through node:https with a keep-alive
// agent. A loopback round trip through node:http costs about half of what
// Node's fetch costs, and on a socket of its own about half of node:http's
// CPU again. Everywhere else (browsers, edge runtimes, Deno, Bun, or a
// fetch passed in) through fetch. The node: modules are imported on first
// use, never at the top, so that bundlers and runtimes without them load
// the client untouched.

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
  return isNode() ? viaNode() : viaFetch(globalThis.fetch.bind(globalThis));
}

/** Node's transport: http: on sockets of its own (viaNodeSocket), https: through node:https. */
export function viaNode(): Send {
  const plain = viaNodeSocket();
  const tls = viaNodeHTTP();
  return (req) => (req.url.startsWith("https:") ? tls(req) : plain(req));
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

// HTTP/1.1 on node:net sockets, for http: URLs. A request is written in
// one write; its answer is read by the small parser below: the status
// line, the headers, and a body framed by Content-Length, by chunks, or
// by the socket's close. A socket whose answer ended, and that neither
// side closes, waits in a pool of its origin for the next request (idle
// sockets closed after idleMs, unreferenced meanwhile so that they keep no
// process alive). It skips node:http's request and answer objects, its
// agent and its streams: a loopback request costs Node about half the CPU.

// The slice of node:net the transport uses.
interface NodeSocket {
  write(data: string): boolean;
  setNoDelay(on: boolean): unknown;
  ref(): unknown;
  unref(): unknown;
  destroy(err?: Error): unknown;
  on(ev: "data", fn: (chunk: Buffer) => void): unknown;
  on(ev: "error", fn: (err: Error & { code?: string }) => void): unknown;
  on(ev: "close", fn: () => void): unknown;
}
interface NodeNet {
  connect(opts: { host: string; port: number }): NodeSocket;
}

let netModule: Promise<NodeNet> | undefined;
let netLoaded: NodeNet | undefined;

function loadNet(): Promise<NodeNet> {
  const spec = (name: string) => `node:${name}`;
  netModule ??= import(/* webpackIgnore: true */ /* @vite-ignore */ spec("net")).then((m) => {
    netLoaded = (m.default ?? m) as NodeNet;
    return netLoaded;
  });
  return netModule;
}

// A socket idle this long is closed, as the agent's of node:http above.
const idleMs = 4000;
// The most bytes an answer's status line and headers may take.
const maxHead = 64 << 10;

// The idle sockets of every client of this process, by origin.
const idleSockets = new Map<string, Conn[]>();

/** The node:net transport, for http: URLs. */
export function viaNodeSocket(): Send {
  return (req) => socketSend(idleSockets, req, true);
}

async function socketSend(pool: Map<string, Conn[]>, req: Outgoing, again: boolean): Promise<Answer> {
  const net = netLoaded ?? (await loadNet());
  const signal = req.signal;
  if (signal?.aborted) throw signal.reason;
  const u = new URL(req.url);
  if (u.protocol !== "http:") throw new TypeError(`the socket transport sends http: URLs only, not ${u.protocol}`);
  const head = requestHead(req, u);
  const origin = u.host;
  let conn: Conn | undefined;
  // Sent again, it goes on a new socket: the idle ones may be as stale.
  const idle = again ? pool.get(origin) : undefined;
  while (idle?.length) {
    const c = idle.pop()!;
    if (c.take()) {
      conn = c;
      break;
    }
  }
  conn ??= new Conn(net, u, pool, origin);
  try {
    return await conn.exchange(head, req.method === "HEAD", signal);
  } catch (err) {
    // A kept-alive socket the server had closed before it read the
    // request: sent again once on a new socket, when nothing was answered
    // and the method is idempotent (RFC 9110 9.2.2).
    if (again && err instanceof Stale && idempotent.has(req.method)) return socketSend(pool, req, false);
    throw err instanceof Stale ? err.error : err;
  }
}

// requestHead is the request as written: its line, headers and body.
function requestHead(req: Outgoing, u: URL): string {
  let h = `${req.method} ${u.pathname}${u.search} HTTP/1.1\r\nHost: ${u.host}\r\n`;
  for (const [k, v] of Object.entries(req.headers)) {
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(k)) throw new TypeError(`invalid header name ${JSON.stringify(k)}`);
    if (/[\r\n\0]/.test(v)) throw new TypeError(`invalid value of header ${k}`);
    if (/^(content-length|host|transfer-encoding|connection)$/i.test(k)) continue;
    h += `${k}: ${v}\r\n`;
  }
  if (req.body !== undefined) h += `Content-Length: ${Buffer.byteLength(req.body)}\r\n`;
  else if (req.method === "POST" || req.method === "PUT" || req.method === "PATCH") h += "Content-Length: 0\r\n";
  return `${h}\r\n${req.body ?? ""}`;
}

// Stale is the failure of a request on a reused socket that was closed
// before any of its answer came: the request may be sent again.
class Stale {
  constructor(readonly error: TypeError) {}
}

// An answer's body as it arrives: its pieces, its end or its failure.
class Body {
  parts: Uint8Array[] = [];
  ended = false;
  error: unknown;
  dropping = false;
  #wake: (() => void) | undefined;

  push(chunk: Uint8Array): void {
    if (!this.dropping) this.parts.push(chunk);
    this.#poke();
  }
  end(): void {
    this.ended = true;
    this.#poke();
  }
  fail(err: unknown): void {
    if (this.ended || this.error !== undefined) return;
    this.error = err;
    this.#poke();
  }
  // next resolves when something arrived.
  next(): Promise<void> {
    return new Promise((resolve) => (this.#wake = resolve));
  }
  #poke(): void {
    const w = this.#wake;
    this.#wake = undefined;
    w?.();
  }
}

// One exchange on a socket: the request written, the answer read.
interface Exchange {
  noBody: boolean;
  resolve: (a: Answer) => void;
  reject: (err: unknown) => void;
  answered: boolean; // the head was read
  received: boolean; // any byte of the answer came
  body?: Body;
  framing?: "length" | "chunked" | "close";
  left: number; // bytes of the body (length) or of the chunk (chunked) still to come
  chunkState: "size" | "data" | "crlf" | "trailer";
  keepAlive: boolean;
  reused: boolean; // the socket carried an exchange before
  signal?: AbortSignal;
  onAbort?: () => void;
}

// Conn is one socket and the exchange on it, if any.
class Conn {
  readonly #sock: NodeSocket;
  readonly #pool: Map<string, Conn[]>;
  readonly #origin: string;
  #buf: Buffer | undefined;
  #ex: Exchange | undefined;
  #uses = 0;
  #closed = false;
  #idle: ReturnType<typeof setTimeout> | undefined;

  constructor(net: NodeNet, u: URL, pool: Map<string, Conn[]>, origin: string) {
    this.#pool = pool;
    this.#origin = origin;
    const host = u.hostname.startsWith("[") ? u.hostname.slice(1, -1) : u.hostname;
    this.#sock = net.connect({ host, port: u.port ? Number(u.port) : 80 });
    this.#sock.setNoDelay(true);
    this.#sock.on("data", (chunk) => this.#data(chunk));
    this.#sock.on("error", (err) => this.#gone(err));
    this.#sock.on("close", () => this.#gone(undefined));
  }

  // take makes an idle socket the next request's, unless it closed.
  take(): boolean {
    if (this.#closed) return false;
    clearTimeout(this.#idle);
    this.#sock.ref();
    return true;
  }

  exchange(head: string, noBody: boolean, signal?: AbortSignal): Promise<Answer> {
    return new Promise<Answer>((resolve, reject) => {
      const ex: Exchange = {
        noBody, resolve, reject, answered: false, received: false, left: 0, chunkState: "size", keepAlive: true,
        reused: this.#uses++ > 0, signal,
      };
      this.#ex = ex;
      if (signal) {
        ex.onAbort = () => this.#abort(ex, signal.reason);
        signal.addEventListener("abort", ex.onAbort, { once: true });
      }
      this.#sock.write(head);
    });
  }

  #abort(ex: Exchange, reason: unknown): void {
    if (this.#ex !== ex) return;
    if (!ex.answered) ex.reject(reason);
    else ex.body!.fail(reason);
    this.#ex = undefined;
    this.#destroy();
  }

  // gone: the socket failed or closed.
  #gone(err: (Error & { code?: string }) | undefined): void {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#idle);
    this.#unpool();
    const ex = this.#ex;
    this.#ex = undefined;
    if (!ex) return;
    this.#done(ex);
    if (!ex.answered) {
      const e = new TypeError(err?.message ?? "the server closed the connection before it answered", { cause: err });
      ex.reject(ex.reused && !ex.received ? new Stale(e) : e);
      return;
    }
    if (ex.framing === "close" && !err) ex.body!.end();
    else ex.body!.fail(new TypeError("terminated", { cause: err })); // as fetch: a broken body
  }

  #done(ex: Exchange): void {
    if (ex.onAbort) ex.signal!.removeEventListener("abort", ex.onAbort);
  }

  #destroy(): void {
    if (!this.#closed) this.#sock.destroy();
  }

  #unpool(): void {
    const idle = this.#pool.get(this.#origin);
    const i = idle?.indexOf(this) ?? -1;
    if (i >= 0) idle!.splice(i, 1);
  }

  #data(chunk: Buffer): void {
    const ex = this.#ex;
    if (!ex) {
      // Bytes no request asked for: the socket is not to be trusted.
      this.#destroy();
      return;
    }
    ex.received = true;
    this.#buf = this.#buf ? Buffer.concat([this.#buf, chunk]) : chunk;
    try {
      this.#parse(ex);
    } catch (err) {
      this.#ex = undefined;
      this.#done(ex);
      const e = new TypeError(`the server's answer is not HTTP/1.1: ${(err as Error).message}`, { cause: err });
      if (!ex.answered) ex.reject(e);
      else ex.body!.fail(e);
      this.#destroy();
    }
  }

  #parse(ex: Exchange): void {
    while (this.#buf && this.#ex === ex) {
      const buf = this.#buf;
      if (!ex.answered) {
        const end = buf.indexOf("\r\n\r\n");
        if (end < 0) {
          if (buf.length > maxHead) throw new Error("headers too long");
          return;
        }
        this.#buf = end + 4 < buf.length ? buf.subarray(end + 4) : undefined;
        this.#head(ex, buf.toString("latin1", 0, end));
        continue;
      }
      const body = ex.body!;
      if (ex.framing === "close") {
        body.push(buf);
        this.#buf = undefined;
        return;
      }
      if (ex.framing === "length") {
        const n = Math.min(ex.left, buf.length);
        body.push(buf.subarray(0, n));
        ex.left -= n;
        this.#buf = n < buf.length ? buf.subarray(n) : undefined;
        if (ex.left === 0) this.#finish(ex);
        continue;
      }
      // chunked
      if (ex.chunkState === "size" || ex.chunkState === "trailer") {
        const nl = buf.indexOf("\r\n");
        if (nl < 0) {
          if (buf.length > maxHead) throw new Error("chunk line too long");
          return;
        }
        const line = buf.toString("latin1", 0, nl);
        this.#buf = nl + 2 < buf.length ? buf.subarray(nl + 2) : undefined;
        if (ex.chunkState === "trailer") {
          if (line === "") this.#finish(ex);
          continue;
        }
        const size = line.split(";")[0].trim();
        if (!/^[0-9a-fA-F]{1,8}$/.test(size)) throw new Error(`chunk size ${JSON.stringify(size)}`);
        ex.left = parseInt(size, 16);
        ex.chunkState = ex.left === 0 ? "trailer" : "data";
        continue;
      }
      if (ex.chunkState === "data") {
        const n = Math.min(ex.left, buf.length);
        body.push(buf.subarray(0, n));
        ex.left -= n;
        this.#buf = n < buf.length ? buf.subarray(n) : undefined;
        if (ex.left === 0) ex.chunkState = "crlf";
        continue;
      }
      // crlf after a chunk's data
      if (buf.length < 2) return;
      if (buf[0] !== 13 || buf[1] !== 10) throw new Error("no CRLF after a chunk");
      this.#buf = buf.length > 2 ? buf.subarray(2) : undefined;
      ex.chunkState = "size";
    }
  }

  // head reads an answer's status line and headers, and answers the
  // request (an interim 1xx answer is skipped).
  #head(ex: Exchange, text: string): void {
    const lines = text.split("\r\n");
    const m = /^HTTP\/1\.([01]) (\d{3})(?: |$)/.exec(lines[0]);
    if (!m) throw new Error(`status line ${JSON.stringify(lines[0].slice(0, 80))}`);
    const status = Number(m[2]);
    if (status >= 100 && status < 200 && status !== 101) return;
    const headers: Record<string, string> = {};
    for (let i = 1; i < lines.length; i++) {
      const c = lines[i].indexOf(":");
      if (c <= 0) throw new Error(`header line ${JSON.stringify(lines[i].slice(0, 80))}`);
      const k = lines[i].slice(0, c).trim().toLowerCase();
      const v = lines[i].slice(c + 1).trim();
      headers[k] = k in headers ? `${headers[k]}, ${v}` : v;
    }
    const connection = (headers["connection"] ?? "").toLowerCase();
    ex.keepAlive = m[1] === "1" ? !/\bclose\b/.test(connection) : /\bkeep-alive\b/.test(connection);
    const te = (headers["transfer-encoding"] ?? "").toLowerCase();
    const cl = headers["content-length"];
    if (ex.noBody || status === 204 || status === 304) {
      ex.framing = "length";
      ex.left = 0;
    } else if (te !== "") {
      if (!/(^|,)\s*chunked\s*$/.test(te)) throw new Error(`transfer encoding ${JSON.stringify(te)}`);
      ex.framing = "chunked";
    } else if (cl !== undefined) {
      if (!/^\d{1,15}$/.test(cl)) throw new Error(`content length ${JSON.stringify(cl)}`);
      ex.framing = "length";
      ex.left = Number(cl);
    } else {
      ex.framing = "close";
      ex.keepAlive = false;
    }
    ex.answered = true;
    ex.body = new Body();
    ex.resolve(socketAnswer(status, headers, ex.body));
    if (ex.framing === "length" && ex.left === 0) this.#finish(ex);
  }

  // finish ends the exchange's answer, and pools the socket when it may
  // carry another.
  #finish(ex: Exchange): void {
    this.#ex = undefined;
    this.#done(ex);
    ex.body!.end();
    if (!ex.keepAlive || this.#buf !== undefined || this.#closed) {
      this.#destroy();
      return;
    }
    this.#sock.unref();
    this.#idle = setTimeout(() => this.#destroy(), idleMs);
    (this.#idle as { unref?: () => void }).unref?.();
    let idle = this.#pool.get(this.#origin);
    if (!idle) this.#pool.set(this.#origin, (idle = []));
    idle.push(this);
  }
}

function socketAnswer(status: number, headers: Record<string, string>, body: Body): Answer {
  let taken = false;
  const take = () => {
    if (taken) throw new TypeError("the body of this answer was already read");
    taken = true;
  };
  async function* chunks(): AsyncGenerator<Uint8Array> {
    take();
    for (;;) {
      while (body.parts.length > 0) yield body.parts.shift()!;
      if (body.error !== undefined) throw body.error;
      if (body.ended) return;
      await body.next();
    }
  }
  return {
    status,
    header: (name) => headers[name.toLowerCase()] ?? null,
    async text() {
      take();
      while (!body.ended && body.error === undefined) await body.next();
      if (body.error !== undefined) throw body.error;
      const p = body.parts;
      return (p.length === 1 ? (p[0] as Buffer) : Buffer.concat(p)).toString("utf8");
    },
    chunks,
    discard() {
      if (taken) return;
      taken = true;
      body.dropping = true;
      body.parts = [];
    },
  };
}
