// The client's two transports, node:http and fetch, held to the same
// answers where a workspaced server cannot be made to misbehave: a body
// that breaks halfway, headers repeated or in any case, a request aborted
// in flight, and a kept-alive socket the server closes as a request
// arrives on it (sent again once when the method is idempotent). The
// server here is Node's own http server, the sockets real.
import { test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import net, { type AddressInfo } from "node:net";
import { type Send, isNode, viaFetch, viaNodeHTTP, viaNodeSocket } from "../src/transport.js";

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
  ["node:net", viaNodeSocket],
  ["node:http", viaNodeHTTP],
  ["fetch", () => viaFetch(globalThis.fetch.bind(globalThis))],
];

test("on Node the client's default transport is its own (node:net, node:https)", () => {
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

for (const [name, make] of transports.slice(0, 2)) {
  test(`${name}: a kept-alive socket closed as a request arrives: a GET is sent again once, a POST is not`, async () => {
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
      const send = make();
      assert.equal(await (await send({ method: "GET", url: s.url, headers: {} })).text(), "ok");
      assert.equal(await (await send({ method: "GET", url: s.url, headers: {} })).text(), "ok");
      assert.equal(requests, 3);
      await assert.rejects(send({ method: "POST", url: s.url, headers: {}, body: "{}" }), (e: unknown) => e instanceof TypeError);
      assert.equal(requests, 4);
    } finally {
      await s.stop();
    }
  });
}

test("node:net: a GET sent again after a stale socket goes on a new one, not on another idle socket as stale", async () => {
  let requests = 0;
  // Each connection answers its first request; a second one finds it closed.
  const served = new WeakSet<object>();
  const s = await serve((req, res) => {
    requests++;
    if (served.has(req.socket)) return req.socket.destroy();
    served.add(req.socket);
    setTimeout(() => res.end("ok"), 20); // both first requests in flight at once: two sockets
  });
  try {
    const send = viaNodeSocket();
    const both = await Promise.all([0, 1].map(() => send({ method: "GET", url: s.url, headers: {} })));
    for (const a of both) assert.equal(await a.text(), "ok");
    assert.equal(requests, 2);
    // Two idle sockets, both stale: the GET fails on one and goes again once, on a new socket.
    assert.equal(await (await send({ method: "GET", url: s.url, headers: {} })).text(), "ok");
    assert.equal(requests, 4);
  } finally {
    await s.stop();
  }
});

// rawServe starts a TCP server that reads each request whole (its head and
// its Content-Length of body) and writes back the pieces answer gives,
// one write each, a few milliseconds apart; the socket ends after them
// when answer says so. It counts the connections and the requests.
async function rawServe(answer: (req: string, n: number) => { pieces: (string | Buffer)[]; end?: boolean }) {
  const stats = { connections: 0, requests: 0, bodies: [] as string[] };
  const open = new Set<net.Socket>();
  const srv = net.createServer((sock) => {
    stats.connections++;
    open.add(sock);
    sock.on("close", () => open.delete(sock));
    let buf = Buffer.alloc(0);
    sock.on("data", async (d) => {
      buf = Buffer.concat([buf, d]);
      for (;;) {
        const end = buf.indexOf("\r\n\r\n");
        if (end < 0) return;
        const head = buf.toString("latin1", 0, end);
        const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
        if (buf.length < end + 4 + length) return;
        stats.bodies.push(buf.toString("utf8", end + 4, end + 4 + length));
        buf = buf.subarray(end + 4 + length);
        const a = answer(head, ++stats.requests);
        for (const p of a.pieces) {
          sock.write(p);
          await new Promise((r) => setTimeout(r, 2));
        }
        if (a.end) sock.end();
      }
    });
    sock.on("error", () => {});
  });
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
  return {
    url,
    stats,
    stop: () => {
      for (const sock of open) sock.destroy();
      return new Promise<void>((r) => srv.close(() => r()));
    },
  };
}

// byBytes splits s into pieces of one byte each.
const byBytes = (s: string) => [...Buffer.from(s)].map((b) => Buffer.from([b]));

test("node:net: answers framed every way HTTP/1.1 allows, in pieces of any size, on one kept-alive socket", async () => {
  const json = '{"v":"é"}';
  const answers: { pieces: (string | Buffer)[]; status: number; text: string }[] = [
    // Content-Length, one byte a write.
    { pieces: byBytes(`HTTP/1.1 200 OK\r\nContent-Length: ${Buffer.byteLength(json)}\r\n\r\n${json}`), status: 200, text: json },
    // Chunked, with a chunk extension and a trailer, one byte a write.
    { pieces: byBytes(`HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4;x=y\r\n{"v"\r\n${(Buffer.byteLength(json) - 4).toString(16)}\r\n${json.slice(4)}\r\n0\r\nX-Trailer: t\r\n\r\n`), status: 200, text: json },
    // Chunked, in three writes cut anywhere.
    { pieces: ["HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\nX-A: 1\r\nx-a: 2\r\n\r\n3\r", "\nabc\r\n1", "0\r\n0123456789abcdef\r\n0\r\n\r\n"], status: 201, text: "abc0123456789abcdef" },
    // An interim answer before the final one; then a 204 with no body.
    { pieces: ["HTTP/1.1 100 Continue\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"], status: 200, text: "ok" },
    { pieces: ["HTTP/1.1 204 No Content\r\n\r\n"], status: 204, text: "" },
    // An empty body, then a large one.
    { pieces: ["HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"], status: 200, text: "" },
    { pieces: [`HTTP/1.1 200 OK\r\nContent-Length: 300000\r\n\r\n${"x".repeat(100000)}`, "y".repeat(100000), "z".repeat(100000)], status: 200, text: "x".repeat(100000) + "y".repeat(100000) + "z".repeat(100000) },
  ];
  const s = await rawServe((_req, n) => answers[n - 1]);
  try {
    const send = viaNodeSocket();
    for (const [i, a] of answers.entries()) {
      const got = await send({ method: "PUT", url: `${s.url}/x?i=${i}`, headers: { "X-Sent": "yes" }, body: json });
      assert.equal(got.status, a.status, `answer ${i}`);
      assert.equal(await got.text(), a.text, `answer ${i}`);
      if (i === 2) assert.equal(got.header("X-A"), "1, 2");
    }
    assert.equal(s.stats.connections, 1, "every answer on one socket");
    assert.deepEqual(s.stats.bodies, answers.map(() => json));
  } finally {
    await s.stop();
  }
});

test("node:net: a body read to the socket's close, an answer saying Connection: close, a HEAD's length, each on its own socket after", async () => {
  const s = await rawServe((req, n) => {
    if (n === 1) return { pieces: ["HTTP/1.1 200 OK\r\n\r\nuntil", " the end"], end: true };
    if (n === 2) return { pieces: ["HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 3\r\n\r\nbye"], end: false };
    if (req.startsWith("HEAD")) return { pieces: ["HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n"] };
    return { pieces: ["HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nafter"] };
  });
  try {
    const send = viaNodeSocket();
    assert.equal(await (await send({ method: "GET", url: s.url, headers: {} })).text(), "until the end");
    assert.equal(await (await send({ method: "GET", url: s.url, headers: {} })).text(), "bye");
    const head = await send({ method: "HEAD", url: s.url, headers: {} });
    assert.equal(head.header("content-length"), "10");
    assert.equal(await head.text(), "");
    assert.equal(await (await send({ method: "GET", url: s.url, headers: {} })).text(), "after");
    assert.equal(s.stats.connections, 3);
  } finally {
    await s.stop();
  }
});

test("node:net: what is not HTTP/1.1 rejects with a TypeError, and its socket is not used again", async () => {
  const s = await rawServe((_req, n) => {
    if (n === 1) return { pieces: ["SMTP 220 hello\r\n\r\n"] };
    if (n === 2) return { pieces: ["HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"] };
    return { pieces: ["HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"] };
  });
  try {
    const send = viaNodeSocket();
    await assert.rejects(send({ method: "GET", url: s.url, headers: {} }), TypeError);
    const broken = await send({ method: "GET", url: s.url, headers: {} });
    await assert.rejects(broken.text(), TypeError);
    assert.equal(await (await send({ method: "GET", url: s.url, headers: {} })).text(), "ok");
    assert.equal(s.stats.connections, 3);
    await assert.rejects(send({ method: "GET", url: s.url, headers: { "X-Bad": "a\r\nInjected: 1" } }), TypeError);
    assert.equal(s.stats.requests, 3, "a header that would break the request's head is refused before it is sent");
  } finally {
    await s.stop();
  }
});
