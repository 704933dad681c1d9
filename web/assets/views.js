// The task page's views for people watching a run: the dependency graph
// with its critical path, the Gantt chart of attempts per worker, plan and
// output versions compared in words, and folded runs of refused claims.
// Agent text reaches the DOM as text only (text nodes, setAttribute).
"use strict";
const WSV = (() => {
  const { h, fmtTime } = WS;
  const NS = "http://www.w3.org/2000/svg";
  function el(tag, attrs, ...kids) {
    const e = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined && v !== null && v !== false) e.setAttribute(k, String(v));
    for (const c of kids.flat(Infinity)) if (c !== undefined && c !== null && c !== false) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    return e;
  }
  const clip = (s, n) => (s = String(s || ""), s.length > n ? s.slice(0, n - 1) + "…" : s);
  function fmtDur(ms) {
    if (ms == null || !isFinite(ms) || ms < 0) return "";
    if (ms < 1000) return `${Math.round(ms)} ms`;
    const s = ms / 1000;
    if (s < 60) return `${s.toFixed(1)} s`;
    if (s < 3600) return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
    return `${Math.floor(s / 3600)} h ${Math.round((s % 3600) / 60)} min`;
  }
  // duration of a subtask's last attempt: to its completion, or to now
  // while it runs.
  function duration(ss, now) {
    if (!ss || !ss.started_at) return null;
    const a = Date.parse(ss.started_at), b = ss.completed_at ? Date.parse(ss.completed_at) : (ss.status === "in_progress" ? now : NaN);
    return isFinite(b) ? b - a : null;
  }

  // depths gives each subtask its column: one past its deepest
  // dependency (a cycle or an unknown id counts as depth 0).
  function depths(plan) {
    const byId = new Map(plan.map((s) => [s.id, s]));
    const depth = new Map(), visiting = new Set();
    const d = (sid) => {
      if (depth.has(sid)) return depth.get(sid);
      const s = byId.get(sid);
      if (!s || visiting.has(sid)) return 0;
      visiting.add(sid);
      const v = Math.max(-1, ...(s.dependencies || []).filter((x) => byId.has(x)).map(d)) + 1;
      visiting.delete(sid);
      depth.set(sid, v);
      return v;
    };
    plan.forEach((s) => d(s.id));
    return depth;
  }

  // criticalPath is the longest chain of dependencies: by duration once
  // every subtask is done, by count of subtasks while the run goes on.
  function criticalPath(plan, subs, depth, now) {
    const finished = plan.length > 0 && plan.every((s) => subs[s.id] && subs[s.id].status === "completed");
    const by = finished ? "duration" : "count";
    const w = (sid) => (by === "count" ? 1 : Math.max(0, duration(subs[sid], now) || 0));
    const order = [...plan].sort((a, b) => depth.get(a.id) - depth.get(b.id));
    const ids = new Set(plan.map((s) => s.id));
    const best = new Map(), prev = new Map();
    for (const s of order) {
      let b = 0, p = null;
      for (const dep of s.dependencies || []) if (ids.has(dep) && best.has(dep) && best.get(dep) > b) { b = best.get(dep); p = dep; }
      best.set(s.id, b + w(s.id));
      prev.set(s.id, p);
    }
    let end = null;
    for (const [sid, v] of best) if (end === null || v > best.get(end)) end = sid;
    const chain = [];
    for (let x = end; x !== null && chain.length <= plan.length; x = prev.get(x)) chain.unshift(x);
    return { chain, by, total: end === null ? 0 : best.get(end) };
  }

  // graph draws the plan as columns by depth with arrows from each
  // dependency to its dependent, checkpoints where they gate, and the
  // critical path; pick(id) is called with the subtask clicked.
  const W = 176, H = 54, GX = 84, GY = 14, PAD = 12, CP = 13;
  function graph(plan, checkpoints, state, pick, now = Date.now(), marks = {}) {
    const subs = (state && state.subtasks) || {};
    const cps = (state && state.checkpoints) || {};
    const depth = depths(plan);
    const cols = [];
    for (const s of plan) (cols[depth.get(s.id)] ||= []).push(s);
    const pos = new Map();
    cols.forEach((col, x) => {
      // Order a column by where its dependencies stand, to keep arrows short.
      const key = (s) => { const ys = (s.dependencies || []).filter((d) => pos.has(d)).map((d) => pos.get(d)[1]); return ys.length ? ys.reduce((a, b) => a + b, 0) / ys.length : 0; };
      if (x > 0) col.sort((a, b) => key(a) - key(b));
      col.forEach((s, y) => pos.set(s.id, [PAD + x * (W + GX), PAD + y * (H + GY)]));
    });
    const crit = criticalPath(plan, subs, depth, now);
    const onPath = new Set(crit.chain), critEdges = new Set(crit.chain.slice(1).map((sid, i) => crit.chain[i] + ">" + sid));
    // Checkpoints stand in the gap after the last column of their
    // subtasks, at the height of those subtasks.
    const gates = [];
    const taken = new Map();
    for (const c of checkpoints || []) {
      const members = (c.subtasks || []).filter((x) => pos.has(x));
      if (!members.length) continue;
      const gx = Math.max(...members.map((x) => depth.get(x)));
      let cy = members.map((x) => pos.get(x)[1] + H / 2).reduce((a, b) => a + b, 0) / members.length;
      const used = taken.get(gx) || [];
      while (used.some((u) => Math.abs(u - cy) < 2 * CP + 6)) cy += 2 * CP + 6;
      used.push(cy); taken.set(gx, used);
      gates.push({ c, members, x: PAD + gx * (W + GX) + W + GX / 2, y: cy });
    }
    const width = PAD * 2 + cols.length * (W + GX);
    const height = PAD * 2 + Math.max(Math.max(...cols.map((c) => c.length)) * (H + GY), ...gates.map((g) => g.y + CP + PAD));
    const svg = el("svg", { class: "graph", id: "graph", width, height, viewBox: `0 0 ${width} ${height}`, "data-critical-by": crit.by },
      el("defs", {}, el("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" },
        el("path", { d: "M0,0 L10,5 L0,10 z", class: "head" })),
      el("marker", { id: "arrow-crit", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" },
        el("path", { d: "M0,0 L10,5 L0,10 z", class: "head crit" }))));
    const curve = (x1, y1, x2, y2) => `M${x1},${y1} C${x1 + GX / 2},${y1} ${x2 - GX / 2},${y2} ${x2},${y2}`;
    const edges = el("g", { class: "edges" });
    for (const s of plan) for (const dep of s.dependencies || []) {
      if (!pos.has(dep)) continue;
      const [x1, y1] = pos.get(dep), [x2, y2] = pos.get(s.id);
      const c = critEdges.has(dep + ">" + s.id);
      edges.append(el("path", { class: "edge" + (c ? " crit" : ""), "data-from": dep, "data-to": s.id, d: curve(x1 + W, y1 + H / 2, x2 - 2, y2 + H / 2), "marker-end": c ? "url(#arrow-crit)" : "url(#arrow)" }));
    }
    for (const g of gates) for (const m of g.members) {
      const [x1, y1] = pos.get(m);
      edges.append(el("path", { class: "edge gate", d: curve(x1 + W, y1 + H / 2, g.x - CP - 2, g.y), "marker-end": "url(#arrow)" }));
    }
    svg.append(edges);
    for (const s of plan) {
      const [x, y] = pos.get(s.id), ss = subs[s.id] || {};
      const st = ss.status || "not started";
      const line2 = [st.replace("_", " "), ss.worker].filter(Boolean).join(" · ");
      const line3 = [ss.attempts ? `attempts ${ss.attempts}` : "", fmtDur(duration(ss, now))].filter(Boolean).join(" · ");
      const g = el("g", { class: "node" + (onPath.has(s.id) ? " crit" : "") + (marks[s.id] ? " " + marks[s.id] : ""), "data-subtask": s.id, "data-status": st,
        ...(marks[s.id] ? { "data-amendment": marks[s.id] } : {}), tabindex: 0, role: "button" },
        el("title", {}, `${s.id}: ${s.description || ""}`),
        el("rect", { x, y, width: W, height: H, rx: 5 }),
        el("text", { x: x + 8, y: y + 16, class: "id" }, clip(s.id, 24)),
        el("text", { x: x + 8, y: y + 31 }, clip(line2, 28)),
        el("text", { x: x + 8, y: y + 45 }, clip(line3, 28)));
      g.addEventListener("click", () => pick(s.id));
      g.addEventListener("keydown", (e) => { if (e.key === "Enter") pick(s.id); });
      svg.append(g);
    }
    for (const { c, x, y } of gates) {
      const cs = (cps[c.id] || {}).status || "pending";
      svg.append(el("g", { class: "checkpoint", "data-checkpoint": c.id, "data-status": cs },
        el("title", {}, `checkpoint ${c.id} (${cs}): ${c.description || ""} — gates ${(c.subtasks || []).join(", ")}`),
        el("path", { d: `M${x},${y - CP} L${x + CP},${y} L${x},${y + CP} L${x - CP},${y} z` }),
        el("text", { x: x - CP, y: y + CP + 11 }, clip(c.id, 16))));
    }
    const caption = crit.chain.length
      ? h("p", { class: "muted", id: "critical-path" }, `critical path (${crit.by === "count" ? "by count of subtasks, while the run goes on" : "by duration"}): `,
        crit.chain.join(" → "), crit.by === "duration" ? ` · ${fmtDur(crit.total)}` : ` · ${crit.chain.length} subtasks`)
      : null;
    return { svg, caption, critical: crit };
  }

  // details is the box a clicked subtask opens.
  function details(s, ss, deps, dependents, now = Date.now()) {
    ss = ss || {};
    const row = (k, v) => (v || v === 0 ? [h("span", { class: "muted" }, k), h("span", {}, String(v))] : []);
    return h("div", { class: "box", id: "graph-detail", "data-subtask": s.id }, h("h3", {}, s.id, " ", WS.status(ss.status || "not started")),
      h("p", {}, s.description || ""),
      h("div", { class: "kv-grid" }, row("worker", ss.worker), row("attempts", ss.attempts), row("started", fmtTime(ss.started_at)),
        row("completed", fmtTime(ss.completed_at)), row("duration", fmtDur(duration(ss, now))), row("depends on", deps.join(", ")),
        row("needed by", dependents.join(", ")), row("complexity", s.estimated_complexity), row("max retries", s.max_retries), row("output", ss.output),
        row("error", ss.error)));
  }

  // gantt draws one row per worker, a bar per attempt from its
  // assignment to its completion or failure (or to now while it runs).
  function gantt(spans, now = Date.now()) {
    if (!spans.length) return [h("p", { class: "muted" }, "No subtask was assigned yet.")];
    const workers = [...new Set(spans.map((s) => s.worker))].sort();
    const t0 = Math.min(...spans.map((s) => Date.parse(s.start)));
    const end = (s) => (s.end ? Date.parse(s.end) : now);
    const t1 = Math.max(t0 + 1, ...spans.map(end));
    const LW = 120, PW = 860, RH = 28, TOP = 22;
    const x = (t) => LW + ((t - t0) / (t1 - t0)) * PW;
    const svg = el("svg", { class: "gantt", id: "gantt", width: LW + PW + 20, height: TOP + workers.length * RH + 8, viewBox: `0 0 ${LW + PW + 20} ${TOP + workers.length * RH + 8}` });
    for (let i = 0; i <= 5; i++) {
      const t = t0 + ((t1 - t0) * i) / 5;
      svg.append(el("line", { class: "tick", x1: x(t), x2: x(t), y1: TOP - 4, y2: TOP + workers.length * RH }),
        el("text", { class: "tick", x: x(t) + 2, y: 12 }, i === 0 ? fmtTime(new Date(t0).toISOString()).slice(11) : "+" + fmtDur(t - t0)));
    }
    workers.forEach((w, i) => {
      const y = TOP + i * RH;
      svg.append(el("text", { class: "worker", x: 4, y: y + RH / 2 + 4, "data-worker": w }, clip(w, 16)));
      for (const s of spans.filter((s) => s.worker === w)) {
        const bx = x(Date.parse(s.start)), bw = Math.max(3, x(end(s)) - bx);
        const label = s.subtask + (s.attempt > 1 ? ` #${s.attempt}` : "");
        const what = s.outcome === "failed" ? (s.retry ? "failed, retried" : "failed") : s.outcome;
        svg.append(el("g", { class: "span", "data-subtask": s.subtask, "data-worker": w, "data-attempt": s.attempt, "data-outcome": s.outcome, "data-retry": s.retry ? "1" : null },
          el("title", {}, `${s.subtask} attempt ${s.attempt} by ${w}: ${what}, ${fmtDur(end(s) - Date.parse(s.start))}${s.end ? "" : " so far"}`),
          el("rect", { x: bx, y: y + 4, width: bw, height: RH - 8, rx: 3 }),
          bw > 44 ? el("text", { x: bx + 4, y: y + RH / 2 + 4 }, clip(label, Math.floor(bw / 7))) : null));
      }
    });
    const retried = spans.filter((s) => s.retry).map((s) => s.subtask);
    return [h("p", { class: "muted", id: "gantt-summary" }, `${spans.length} attempts by ${workers.length} workers over ${fmtDur(t1 - t0)}`,
      retried.length ? ` · retried: ${[...new Set(retried)].join(", ")}` : ""), h("div", { class: "graph-wrap" }, svg)];
  }

  // The comparison of two versions, in words.
  const val = (v) => (v === undefined ? "—" : typeof v === "string" ? JSON.stringify(v) : JSON.stringify(v));
  function change(c) {
    const what = c.from === undefined ? ["added ", val(c.to)] : c.to === undefined ? ["removed (was ", val(c.from), ")"] : [val(c.from), " → ", val(c.to)];
    return h("li", { "data-field": c.field }, h("span", { class: "mono" }, c.field || "(the whole document)"), ": ", what);
  }
  function planDiff(d) {
    if (!d.plan.length && !d.added.length && !d.removed.length && !d.changed.length && !d.checkpoints_added.length && !d.checkpoints_removed.length && !d.checkpoints_changed.length) {
      return [h("p", { class: "muted", id: "plan-diff-same" }, `v${d.from} and v${d.to} plan the same work.`)];
    }
    const n = (k, one, many) => (k === 1 ? one : `${k} ${many}`);
    const summary = [d.added.length && `${n(d.added.length, "1 subtask", "subtasks")} added`, d.removed.length && `${n(d.removed.length, "1 subtask", "subtasks")} removed`,
      d.changed.length && `${n(d.changed.length, "1 subtask", "subtasks")} changed`].filter(Boolean).join(", ");
    const deps = (s) => ((s.dependencies || []).length ? ` (after ${s.dependencies.join(", ")})` : "");
    return [h("p", { id: "plan-diff-summary" }, `From v${d.from} to v${d.to}: `, summary || "the subtasks are the same", "."),
      d.plan.length ? [h("h4", {}, "The plan"), h("ul", {}, d.plan.map(change))] : null,
      d.added.map((s) => h("div", { class: "add", "data-added": s.id }, "+ added ", h("b", {}, s.id), ": ", s.description || "", deps(s))),
      d.removed.map((s) => h("div", { class: "del", "data-removed": s.id }, "− removed ", h("b", {}, s.id), ": ", s.description || "")),
      d.changed.map((c) => h("div", { class: "chg", "data-changed": c.id }, "~ changed ", h("b", {}, c.id), h("ul", {}, c.changes.map(change)))),
      d.checkpoints_added.map((c) => h("div", { class: "add" }, "+ checkpoint ", h("b", {}, c.id), " over ", (c.subtasks || []).join(", "))),
      d.checkpoints_removed.map((c) => h("div", { class: "del" }, "− checkpoint ", h("b", {}, c.id))),
      d.checkpoints_changed.map((c) => h("div", { class: "chg" }, "~ checkpoint ", h("b", {}, c.id), h("ul", {}, c.changes.map(change))))];
  }
  function docDiff(d) {
    if (!d.changes.length) return [h("p", { class: "muted" }, "The two versions are the same.")];
    const name = (v) => (v === 0 ? "the current version" : `version ${v}`);
    return [h("p", {}, `From ${name(d.from)} to ${name(d.to)}: ${d.changes.length} field${d.changes.length === 1 ? "" : "s"} changed.`), h("ul", { class: "changes" }, d.changes.map(change))];
  }

  // foldRuns groups events (newest first) so that consecutive refused
  // claims make one item: [{e}] or [{fold: [e, …]}].
  function foldRuns(list) {
    const out = [];
    for (const e of list) {
      const last = out[out.length - 1];
      if (e.event === "claim_refused" && last && (last.fold || (last.e && last.e.event === "claim_refused"))) {
        if (!last.fold) { last.fold = [last.e]; delete last.e; }
        last.fold.push(e);
      } else out.push({ e });
    }
    return out;
  }
  // foldRow is the line of a run of refused claims: how many, and which
  // subtask each agent lost; a click shows each line.
  function foldRow(evs, one) {
    const by = new Map();
    for (const e of evs) {
      const sub = (e.args && e.args[0]) || "?";
      if (!by.has(sub)) by.set(sub, []);
      by.get(sub).push((e.attrs && e.attrs.agent) || "?");
    }
    const more = h("div", { class: "fold-rows", hidden: true }, evs.map((e) => one(e)));
    const row = h("div", { class: "ev fold", "data-event": "claim_refused", "data-count": evs.length, "data-ids": evs.map((e) => e.id).join(" "), title: "show each" },
      h("span", { class: "t" }, fmtTime(evs[0].time).slice(11)), h("span", { class: "n" }, `${evs.length} claims refused:`),
      [...by].map(([sub, agents]) => h("span", { class: "kv" }, `${sub} ← ${agents.join(", ")}`)), more);
    row.addEventListener("click", (ev) => { if (!more.contains(ev.target)) more.hidden = !more.hidden; });
    return row;
  }

  return { graph, details, gantt, planDiff, docDiff, foldRuns, foldRow, fmtDur, criticalPath, depths };
})();
