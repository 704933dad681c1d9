// The client bundled for a browser (esbuild, platform browser): the bundle
// builds without a warning and imports no node: module, and run where there
// is no `process` (a fresh V8 context given fetch and the web's globals, as
// a browser or an edge runtime has them) it sends through that fetch.
import { test } from "node:test";
import assert from "node:assert/strict";
import vm from "node:vm";
import { build } from "esbuild";
import { noServer, token, url } from "./env.js";

async function bundle(): Promise<string> {
  const out = await build({
    entryPoints: ["dist/src/index.js"],
    bundle: true,
    platform: "browser",
    format: "iife",
    globalName: "workspaced",
    write: false,
    logLevel: "silent",
  });
  assert.deepEqual(out.errors, []);
  assert.deepEqual(out.warnings, []);
  return out.outputFiles[0]!.text;
}

test("bundled for a browser: no warning, no node: module imported when loaded", async () => {
  const code = await bundle();
  assert.doesNotMatch(code, /(from|require\()\s*["']node:/);
  assert.match(code, /WorkspacedClient/);
});

test("bundled, where there is no process: the client sends through the fetch it finds", { skip: noServer }, async () => {
  const code = await bundle();
  let calls = 0;
  const sandbox = {
    fetch: (input: RequestInfo | URL, init?: RequestInit) => {
      calls++;
      return fetch(input, init);
    },
    URLSearchParams,
    TextDecoder,
    AbortController,
    AbortSignal,
    DOMException,
    setTimeout,
    clearTimeout,
  };
  const ctx = vm.createContext(sandbox);
  vm.runInContext(`${code}\nglobalThis.workspaced = workspaced;`, ctx);
  assert.equal(vm.runInContext("typeof process", ctx), "undefined");
  const { WorkspacedClient } = (ctx as unknown as { workspaced: typeof import("../src/index.js") }).workspaced;
  const c = new WorkspacedClient({ baseUrl: url, token: token("alpha") });
  assert.equal((await c.whoAmI()).agent, "alpha");
  assert.equal(calls, 1);
});
