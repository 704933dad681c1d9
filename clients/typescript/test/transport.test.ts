// The client's two transports, node:http and fetch, held to the same
// answers where a workspaced server cannot be made to misbehave: a body
// that breaks halfway, headers repeated or in any case, a request aborted
// in flight, and a kept-alive socket the server closes as a request
// arrives on it (sent again once when the method is idempotent). The
// server here is Node's own http server, the sockets real.
import { test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { type Send, isNode, viaFetch, viaNodeHTTP } from "../src/transport.js";

// serve starts a server answering with handler; its URL and a stop.
async function serve(handler: http.RequestListener): Promise<{ url: string; stop: () => Promise<void> }> {
  const srv = http.createServer(handler);
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
  return {
    url,
    stop: () => {
      srv.closeAllConnections();
      return new Promise<void>((r) => srv.close(() => r()));
    },
  };
}

const transports: [string, () => Send][] = [
  ["node:http", viaNodeHTTP],
  ["fetch", () => viaFetch(globalThis.fetch.bind(globalThis))],
];

test("on Node the client's default transport is node:http", () => {
  assert.equal(isNode(), true);
});

for (const [name, make] of transports) {
  test(`${name}: status, headers in any case, repeated headers joined, the body as text`, async () => {
    const s = await serve((req, res) => {
      res.setHeader("X-Twice", ["a", "b"]);
      res.writeHead(201, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ method: req.method, got: req.headers["x-sent"], length: req.headers["content-length"] ?? null }));
    });
    try {
      const a = await make()({ method: "PUT", url: `${s.url}/x`, headers: { "X-Sent": "yes" }, body: '{"v":"é"}' });
      assert.equal(a.status, 201);
      assert.equal(a.header("content-type"), "application/json");
      assert.equal(a.header("CONTENT-TYPE"), "application/json");
      assert.equal(a.header("x-twice"), "a, b");
      assert.equal(a.header("x-none"), null);
      assert.deepEqual(JSON.parse(await a.text()), { method: "PUT", got: "yes", length: String(Buffer.byteLength('{"v":"é"}')) });
    } finally {
      await s.stop();
    }
  });

  test(`${name}: a body that breaks halfway throws a TypeError, read whole or in chunks`, async () => {
    const s = await serve((_req, res) => {
      res.writeHead(200, { "Content-Type": "text/event-stream" });
      res.write("data: one\n\n", () => setTimeout(() => res.socket?.destroy(), 20));
    });
    try {
      const whole = await make()({ method: "GET", url: s.url, headers: {} });
      await assert.rejects(whole.text(), TypeError);
      const streamed = await make()({ method: "GET", url: s.url, headers: {} });
      const got: string[] = [];
      await assert.rejects(async () => {
        for await (const c of streamed.chunks()) got.push(Buffer.from(c).toString());
      }, TypeError);
      assert.equal(got.join(""), "data: one\n\n");
    } finally {
      await s.stop();
    }
  });

  test(`${name}: aborted in flight, the request rejects with the signal's reason`, async () => {
    const s = await serve(() => {}); // never answers
    try {
      const ac = new AbortController();
      const sent = make()({ method: "GET", url: s.url, headers: {}, signal: ac.signal });
      setTimeout(() => ac.abort(new Error("the caller gave up")), 20);
      await assert.rejects(sent, /the caller gave up/);
    } finally {
      await s.stop();
    }
  });
}

test("node:http: a kept-alive socket closed as a request arrives: a GET is sent again once, a POST is not", async () => {
  let requests = 0;
  // The first request on each connection is answered; a second one on the
  // same connection finds it closed, as after a server's idle timeout.
  const served = new WeakSet<object>();
  const s = await serve((req, res) => {
    requests++;
    if (served.has(req.socket)) return req.socket.destroy();
    served.add(req.socket);
    res.end("ok");
  });
  try {
    const send = viaNodeHTTP();
    assert.equal(await (await send({ method: "GET", url: s.url, headers: {} })).text(), "ok");
    assert.equal(await (await send({ method: "GET", url: s.url, headers: {} })).text(), "ok");
    assert.equal(requests, 3);
    await assert.rejects(send({ method: "POST", url: s.url, headers: {}, body: "{}" }), (e: unknown) => e instanceof TypeError);
    assert.equal(requests, 4);
  } finally {
    await s.stop();
  }
});
