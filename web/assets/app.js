// Shared by every page. Everything an agent wrote reaches the DOM as text
// (textContent, text nodes, attribute values set by setAttribute): no
// innerHTML anywhere.
"use strict";

const WS = (() => {
  const meta = (n) => { const m = document.querySelector(`meta[name="${n}"]`); return m ? m.getAttribute("content") : ""; };
  const csrf = meta("csrf-token");
  const readOnly = meta("read-only") === "true";

  // h builds an element: attrs may hold class, text, on<event> handlers
  // and plain attributes; children are nodes or strings (as text), or
  // arrays of them nested to any depth.
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") el.className = v;
      else if (k === "text") el.textContent = String(v);
      else if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
      else if (k === "href" && !/^\/(?!\/)/.test(String(v))) continue; // only our own paths
      else el.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children.flat(Infinity)) {
      if (c === undefined || c === null || c === false) continue;
      el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return el;
  }

  async function api(path) {
    const r = await fetch(path, { headers: { Accept: "application/json" }, credentials: "same-origin" });
    const body = await r.json().catch(() => ({ error: r.statusText }));
    if (!r.ok) throw new Error(body.error + (body.hint ? ` (${body.hint})` : ""));
    return body;
  }

  async function post(path, body) {
    const r = await fetch(path, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf, Accept: "application/json" },
      body: JSON.stringify(body || {}),
    });
    const out = await r.json().catch(() => ({ error: r.statusText }));
    if (!r.ok) throw new Error(out.error + (out.hint ? ` (${out.hint})` : ""));
    return out;
  }

  // The live indicator says what the page is told and whether anything
  // moves: "● live" only while its stream is open and a daemon serves the
  // workspace (or the store cannot tell); with the stream open and no
  // daemon, the page follows the store but no marker is decided.
  let streamOn = false, daemon = null;
  function renderLive() {
    const el = document.getElementById("live");
    if (!el) return;
    const none = daemon && daemon.known && !daemon.serving;
    if (!streamOn) {
      el.className = "live off";
      el.textContent = none ? "○ no daemon" : "○ reconnecting";
    } else if (none) {
      el.className = "live idle";
      el.textContent = "◐ no daemon";
      el.title = "the page follows the store, but no daemon serves this workspace: markers wait undecided";
    } else {
      el.className = "live on";
      el.textContent = "● live";
      el.title = "live updates";
    }
  }
  function setLive(on) { streamOn = on; renderLive(); }

  // stream opens an EventSource; handlers maps event names to functions
  // of the parsed data (and the MessageEvent).
  function stream(url, handlers) {
    const es = new EventSource(url);
    es.onopen = () => setLive(true);
    es.onerror = () => setLive(false);
    for (const [name, fn] of Object.entries(handlers)) {
      es.addEventListener(name, (m) => { let d; try { d = JSON.parse(m.data); } catch { return; } fn(d, m); });
    }
    return es;
  }

  // coalesce returns a function that runs fn at most once at a time, and
  // once more if called while fn ran.
  function coalesce(fn) {
    let running = false, again = false;
    const run = async () => {
      if (running) { again = true; return; }
      running = true;
      try { await fn(); } catch (e) { console.error(e); }
      running = false;
      if (again) { again = false; run(); }
    };
    return run;
  }

  const pad = (n, w = 2) => String(n).padStart(w, "0");
  function fmtTime(t) {
    if (!t) return "";
    const d = new Date(t);
    if (isNaN(d)) return String(t);
    return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  }
  function ago(t) {
    const s = (Date.now() - new Date(t).getTime()) / 1000;
    if (!isFinite(s)) return "";
    if (s < 60) return `${Math.max(0, Math.round(s))} s ago`;
    if (s < 3600) return `${Math.round(s / 60)} min ago`;
    if (s < 86400) return `${Math.round(s / 3600)} h ago`;
    return `${Math.round(s / 86400)} d ago`;
  }
  const status = (s) => h("span", { class: "status", "data-s": s || "", text: s || "—" });
  const bar = (done, total) => h("span", {}, h("span", { class: "bar" }, h("span", { style: null, "data-w": "" })), `${done} of ${total}`);
  function progress(done, total) {
    const b = bar(done, total);
    b.firstChild.firstChild.style.width = total ? `${Math.round((100 * done) / total)}%` : "0";
    return b;
  }

  // rawToggle is a "raw JSON" link that shows the object as text.
  function rawToggle(obj) {
    const pre = h("pre", { hidden: true, text: JSON.stringify(obj, null, 2) });
    const btn = h("button", { class: "raw", onclick: () => { pre.hidden = !pre.hidden; btn.textContent = pre.hidden ? "raw JSON" : "hide JSON"; } }, "raw JSON");
    return h("span", {}, btn, pre);
  }

  function error(msg) { return h("p", { class: "error", text: msg }); }

  // The panel only reads the store: it works with no daemon, but then no
  // marker is decided, and a banner says so. The server looks at most
  // every few seconds; the page asks again every 20 s.
  async function checkServing() {
    let v;
    try { v = await api("/api/serving"); } catch { return; }
    daemon = v;
    renderLive();
    let b = document.getElementById("no-daemon");
    if (v.known && !v.serving) {
      if (!b) {
        b = h("div", { id: "no-daemon", class: "banner", role: "status" }, h("b", {}, "no daemon serves this workspace"),
          " — what you see is what the store holds; markers wait undecided until 'workspaced serve' runs.");
        document.body.insertBefore(b, document.getElementById("main"));
      }
    } else if (b) b.remove();
  }
  if (document.getElementById("main")) { checkServing(); setInterval(checkServing, 20000); }

  return { h, api, post, stream, coalesce, fmtTime, ago, status, progress, rawToggle, error, readOnly, setLive };
})();
