// What the suite runs against: a workspaced API listener, given by the Go
// test that starts it (clients/client_ts_test.go):
//
//   WORKSPACED_URL     the listener's address (http://127.0.0.1:PORT)
//   WORKSPACED_TOKENS  JSON {name: token}: "alpha" and "beta" (task t1, every
//                      right, global memory write), "reader" (global memory
//                      read), "outsider" (task t2 only, no global memory),
//                      "admin" (every task)
//   WORKSPACED_TASK    the task the tokens cover (t1)
//   WORKSPACED_STORE   the workspace's store: files, sqlite or postgres
//   WORKSPACED_TLS_URL an HTTPS listener on the same workspace (mcp --http
//                      with --tls-cert; NODE_EXTRA_CA_CERTS trusts it)
//   WORKSPACED_TRANSPORT  "fetch": every client of the suite is given the
//                      global fetch, where by default it goes through
//                      node:http (the Go test runs client.test.ts both ways)
//
// Without WORKSPACED_URL every test that needs the server is skipped,
// saying so.
import { WorkspacedClient, type ClientOptions } from "../src/index.js";

export const url = process.env.WORKSPACED_URL ?? "";
export const storeKind = process.env.WORKSPACED_STORE ?? "unknown";
export const task = process.env.WORKSPACED_TASK ?? "t1";
export const tlsURL = process.env.WORKSPACED_TLS_URL ?? "";

/** Whether the suite forces fetch on its clients ("fetch") or lets them choose ("node:http" on Node). */
export const transport = process.env.WORKSPACED_TRANSPORT === "fetch" ? "fetch" : "node:http";

/**
 * The options of a client of the suite: o, with fetch given when the
 * suite forces it (the global fetch looked up at each call, so that a test
 * can count the calls).
 */
export function options(o: ClientOptions): ClientOptions {
  return transport === "fetch" ? { fetch: (input, init) => globalThis.fetch(input, init), ...o } : o;
}
const tokens: Record<string, string> = JSON.parse(process.env.WORKSPACED_TOKENS ?? "{}");

/** The reason to skip a test that needs the server, or false with one. */
export const noServer: string | false = url
  ? false
  : "no server: WORKSPACED_URL is unset (go test ./clients -run TestTypeScriptClient starts one per store)";

/** The token of name, failing when the Go test gave none. */
export function token(name: string): string {
  const t = tokens[name];
  if (!t) throw new Error(`WORKSPACED_TOKENS has no token ${name}`);
  return t;
}

/** A client acting as the agent of token name. */
export function client(name = "alpha"): WorkspacedClient {
  return new WorkspacedClient(options({ baseUrl: url, token: token(name) }));
}

/** Compares strings by their UTF-8 bytes: the order the API documents. */
export function byteCompare(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}

/** Compares namespaces label by label, each by its UTF-8 bytes. */
export function nsCompare(a: string[], b: string[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const c = byteCompare(a[i], b[i]);
    if (c) return c;
  }
  return a.length - b.length;
}

/** Waits until cond holds, asking again every 20 ms, failing after ms. */
export async function eventually(what: string, cond: () => Promise<boolean>, ms = 15000): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    if (await cond()) return;
    if (Date.now() > end) throw new Error(`gave up after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
