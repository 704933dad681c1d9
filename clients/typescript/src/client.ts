import type { components, operations } from "./generated/openapi.js";
import { routes } from "./generated/openapi.js";
import { WorkspacedError, problemError } from "./errors.js";
import { type Answer, type Outgoing, type Send, defaultSend, viaFetch } from "./transport.js";

/** The name of an operation of the API (its OpenAPI operationId). */
export type OperationId = keyof operations & keyof typeof routes;

type Defined<T> = Exclude<T, undefined>;
type Params<Op extends OperationId> = Defined<operations[Op]["parameters"]>;
type JSONBody<Op extends OperationId> =
  NonNullable<operations[Op]["requestBody"]> extends { content: { "application/json": infer B } } ? B : never;
// A field of the arguments: left out when the operation has none, optional
// when every part of it is.
type Field<K extends string, T> = [Defined<T>] extends [never]
  ? unknown
  : undefined extends T
    ? { [P in K]?: Defined<T> }
    : {} extends T
      ? { [P in K]?: T }
      : { [P in K]: T };

/**
 * The arguments of an operation, as its OpenAPI document declares them:
 * `path` parameters, `query` parameters, `header` parameters (If-Match,
 * If-None-Match, Last-Event-ID…) and the JSON `body`.
 */
export type OperationArgs<Op extends OperationId> = Field<"path", Params<Op>["path"]> &
  Field<"query", Params<Op>["query"]> &
  Field<"header", Params<Op>["header"]> &
  Field<"body", JSONBody<Op>> & { signal?: AbortSignal };

type Content<R> = R extends { content: { "application/json": infer B } } ? B : undefined;
type Responses<Op extends OperationId> = operations[Op]["responses"];

/** What an operation answers when it succeeds: its JSON body (undefined for a 204). */
export type OperationResult<Op extends OperationId> =
  200 extends keyof Responses<Op>
    ? Content<Responses<Op>[200]>
    : 201 extends keyof Responses<Op>
      ? Content<Responses<Op>[201]>
      : undefined;

type Method<Op extends OperationId> = (
  ...args: {} extends OperationArgs<Op> ? [args?: OperationArgs<Op>] : [args: OperationArgs<Op>]
) => Promise<OperationResult<Op>>;

/** One method per operation of the API, named by its operationId. */
export type Operations = { [Op in OperationId]: Method<Op> };

/** An event of a task, as the API serves it. */
export type TaskEvent = components["schemas"]["Event"];

/** How a WorkspacedClient reaches the server. */
export interface ClientOptions {
  /**
   * The listener's address, e.g. `http://127.0.0.1:7070` (a trailing
   * `/api/v1` is taken off: every path of the API starts with it).
   */
  baseUrl: string;
  /** A token of `workspaced token add`, sent as `Authorization: Bearer`. */
  token?: string;
  /**
   * The agent to act as on a loopback listener without tokens
   * (`Workspace-Agent`); with a token it may only repeat the token's agent.
   */
  agent?: string;
  /**
   * The fetch to send every request with. Without it the client uses, on
   * Node, node:http and node:https with a keep-alive agent of its own (about
   * half the cost of Node's fetch a request), and elsewhere the global fetch.
   */
  fetch?: typeof fetch;
  /** How many times a request answered 429 is sent again, after the Retry-After it names (default 3). */
  retries?: number;
}

/**
 * WorkspacedClient calls the workspace's HTTP API v1: one method per
 * operation of api/openapi.json, named by its operationId and typed from
 * it (`client.getMemoryItem({ query: { namespace: ["users", "42"], key:
 * "prefs" } })`), so it cannot drift from the server. A method resolves to
 * the operation's JSON answer and rejects with a WorkspacedError carrying
 * the server's problem details (kind, detail, hint, current_version).
 *
 * It keeps no state between calls but its options: one client is safe to
 * share between concurrent callers.
 */
export interface WorkspacedClient extends Operations {}

export class WorkspacedClient {
  readonly baseUrl: string;
  readonly #token?: string;
  readonly #agent?: string;
  readonly #send: Send;
  readonly #retries: number;

  constructor(options: ClientOptions) {
    if (!options || typeof options.baseUrl !== "string" || !/^https?:\/\//.test(options.baseUrl)) {
      throw new TypeError(
        `WorkspacedClient needs baseUrl, the listener's http:// or https:// address (got ${JSON.stringify(options?.baseUrl)})`,
      );
    }
    this.baseUrl = options.baseUrl.replace(/\/+$/, "").replace(/\/api\/v1$/, "");
    this.#token = options.token;
    this.#agent = options.agent;
    this.#send = options.fetch ? viaFetch(options.fetch) : defaultSend();
    this.#retries = options.retries ?? 3;
  }

  /**
   * request calls operation op with args: what every method of the client
   * does. A 2xx answer resolves to its JSON body (undefined for a 204);
   * any other rejects with a WorkspacedError.
   */
  async request<Op extends OperationId>(op: Op, args?: OperationArgs<Op>): Promise<OperationResult<Op>> {
    const route = routes[op];
    if (!route) {
      throw new TypeError(`WorkspacedClient: no operation ${JSON.stringify(op)} in the API`);
    }
    const a = (args ?? {}) as {
      path?: Record<string, string | number>;
      query?: Record<string, unknown>;
      header?: Record<string, string | undefined>;
      body?: unknown;
      signal?: AbortSignal;
    };
    const url = this.#url(route.path, a.path, a.query);
    const headers: Record<string, string> = { Accept: "application/json" };
    if (this.#token) headers.Authorization = `Bearer ${this.#token}`;
    if (this.#agent) headers["Workspace-Agent"] = this.#agent;
    for (const [k, v] of Object.entries(a.header ?? {})) {
      if (v !== undefined) headers[k] = String(v);
    }
    let body: string | undefined;
    if (a.body !== undefined) {
      body = JSON.stringify(a.body);
      headers["Content-Type"] = "application/json";
    }
    const res = await this.#sendAgain({ method: route.method, url, headers, body, signal: a.signal });
    if (!ok(res)) throw await problemError(route.method, url, res);
    if (res.status === 204) {
      res.discard();
      return undefined as OperationResult<Op>;
    }
    const text = await res.text();
    if (!text) return undefined as OperationResult<Op>;
    try {
      return JSON.parse(text) as OperationResult<Op>;
    } catch (cause) {
      throw new WorkspacedError({
        status: res.status,
        kind: "unknown",
        detail: `${route.method} ${url}: the answer is not JSON: ${text.slice(0, 200)}`,
        cause,
      });
    }
  }

  /**
   * streamEvents follows a task's events as Server-Sent Events, from after
   * position `after` (0: the start), yielding each event once; when the
   * stream ends or breaks it connects again a second later with
   * Last-Event-ID, so no event is lost or repeated. It ends when `signal`
   * aborts.
   */
  streamEvents(task: string, options: { after?: number; signal?: AbortSignal } = {}): AsyncGenerator<TaskEvent> {
    return this.#follow(this.#url(routes.taskEvents.path, { task }, undefined), options);
  }

  /**
   * streamMemoryEvents follows the memory feed (every put and delete of a
   * namespaced item: memory_stored, memory_deleted, with the namespace,
   * key, agent and version in `attrs`, never the value) as streamEvents
   * follows a task's: from after position `after`, each event once,
   * resumed with Last-Event-ID, until `signal` aborts.
   */
  streamMemoryEvents(options: { after?: number; signal?: AbortSignal } = {}): AsyncGenerator<TaskEvent> {
    return this.#follow(this.#url(routes.memoryEvents.path, undefined, undefined), options);
  }

  async *#follow(url: string, options: { after?: number; signal?: AbortSignal }): AsyncGenerator<TaskEvent> {
    let last = options.after ?? 0;
    while (!options.signal?.aborted) {
      const headers: Record<string, string> = { Accept: "text/event-stream", "Last-Event-ID": String(last) };
      if (this.#token) headers.Authorization = `Bearer ${this.#token}`;
      if (this.#agent) headers["Workspace-Agent"] = this.#agent;
      let res: Answer;
      try {
        res = await this.#sendAgain({ method: "GET", url, headers, signal: options.signal });
      } catch (err) {
        if (options.signal?.aborted) return;
        throw err;
      }
      if (!ok(res)) throw await problemError("GET", url, res);
      try {
        for await (const ev of sse(res)) {
          if (ev.data === undefined) continue;
          const e = JSON.parse(ev.data) as TaskEvent;
          last = ev.id !== undefined ? Number(ev.id) : e.end;
          yield e;
        }
      } catch (err) {
        if (options.signal?.aborted) return;
        if (!(err instanceof TypeError)) throw err; // a broken stream: connect again
      }
      // The stream ended or broke: connect again a second later.
      try {
        await delay(1000, options.signal);
      } catch {
        return;
      }
    }
  }

  #url(template: string, path?: Record<string, string | number>, query?: Record<string, unknown>): string {
    const p = template.replace(/\{([^}]+)\}/g, (_, name: string) => {
      const v = path?.[name];
      if (v === undefined || v === "") {
        throw new TypeError(`WorkspacedClient: ${template} needs the path parameter ${name}`);
      }
      return encodeURIComponent(String(v));
    });
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(query ?? {})) {
      if (v === undefined || v === null) continue;
      for (const one of Array.isArray(v) ? v : [v]) q.append(k, String(one));
    }
    const qs = q.toString();
    return this.baseUrl + p + (qs ? `?${qs}` : "");
  }

  // sendAgain sends req, sending it again after the server's Retry-After
  // while it answers 429 (the server did nothing with those requests).
  async #sendAgain(req: Outgoing): Promise<Answer> {
    for (let attempt = 0; ; attempt++) {
      let res: Answer;
      try {
        res = await this.#send(req);
      } catch (cause) {
        if (req.signal?.aborted) throw cause;
        throw new WorkspacedError({
          status: 0,
          kind: "network",
          detail: `${req.method} ${req.url}: ${(cause as Error)?.message ?? cause}`,
          hint: "is the listener running there (workspaced serve --listen, web or mcp --http)?",
          cause,
        });
      }
      if (res.status !== 429 || attempt >= this.#retries) return res;
      res.discard();
      const after = Number(res.header("retry-after"));
      await delay(Number.isFinite(after) && after > 0 ? Math.min(after, 30) * 1000 : 1000, req.signal);
    }
  }
}

for (const op of Object.keys(routes) as OperationId[]) {
  Object.defineProperty(WorkspacedClient.prototype, op, {
    configurable: true,
    writable: true,
    value: function (this: WorkspacedClient, args?: OperationArgs<typeof op>) {
      return this.request(op, args as never);
    },
  });
}

const ok = (res: Answer) => res.status >= 200 && res.status < 300;

function delay(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(t);
      reject(signal.reason);
    }, { once: true });
  });
}

// sse reads a text/event-stream body into its events (id, event, data);
// comment lines and fields it does not know are skipped.
async function* sse(res: Answer): AsyncGenerator<{ id?: string; event?: string; data?: string }> {
  const decoder = new TextDecoder();
  let buf = "";
  let ev: { id?: string; event?: string; data?: string } = {};
  for await (const chunk of res.chunks()) {
    buf += decoder.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl).replace(/\r$/, "");
      buf = buf.slice(nl + 1);
      if (line === "") {
        if (ev.data !== undefined || ev.id !== undefined) yield ev;
        ev = {};
        continue;
      }
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (field === "data") ev.data = ev.data === undefined ? value : `${ev.data}\n${value}`;
      else if (field === "id") ev.id = value;
      else if (field === "event") ev.event = value;
    }
  }
}
