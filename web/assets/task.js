// The task page: header and actions, the board (or the dependency graph),
// checkpoints and workers, plan versions with a diff, outputs and reviews,
// threads, env data, journal, backups, and the live timeline.
"use strict";
(() => {
  const { h, api, post, stream, coalesce, fmtTime, ago, status, progress, rawToggle, error, readOnly } = WS;
  const main = document.getElementById("main");
  const id = decodeURIComponent(location.pathname.split("/")[2] || "");
  const base = "/api/tasks/" + encodeURIComponent(id);
  const COLS = ["blocked", "pending", "in_progress", "completed", "failed"];

  let view = null;          // GET /api/tasks/{id}
  let tab = location.hash.slice(1) || "board";
  const events = [];        // every event, oldest first
  const seen = new Set();   // their ids
  const filters = { kind: "", agent: "" };

  const head = h("div", { id: "head" });
  const actions = h("div", { id: "actions" });
  const tabs = h("div", { class: "tabs", id: "tabs" });
  const panel = h("div", { id: "panel" });
  const tlList = h("div", { id: "timeline", class: "timeline" });
  const kindSel = h("select", { id: "tl-kind" }), agentSel = h("select", { id: "tl-agent" });
  const tlCount = h("span", { class: "muted", id: "tl-count" });
  // The page as the server painted it stays until the first load has what
  // replaces it.
  const layout = [head, actions, h("div", { class: "layout" },
    h("div", {}, tabs, panel),
    h("div", {}, h("h2", {}, "Timeline ", tlCount), h("div", { class: "controls" }, kindSel, agentSel), tlList))];
  kindSel.addEventListener("change", () => { filters.kind = kindSel.value; renderTimeline(); });
  agentSel.addEventListener("change", () => { filters.agent = agentSel.value; renderTimeline(); });

  const TABS = [["board", "Board"], ["graph", "Graph"], ["time", "Time"], ["replay", "Replay"], ["search", "Search"], ["plan", "Plan"], ["outputs", "Outputs & reviews"], ["threads", "Threads"],
    ["env", "Env data"], ["journal", "Journal"], ["backups", "Backups"]];
  function renderTabs() {
    tabs.replaceChildren(...TABS.map(([k, label]) => h("button", { class: k === tab ? "on" : "", "data-tab": k,
      onclick: () => { tab = k; history.replaceState(null, "", "#" + k); renderTabs(); renderPanel(); } }, label)));
  }

  // ---- header and actions
  function renderHead() {
    const t = view.task, s = view.state;
    const subs = s ? Object.values(s.subtasks || {}) : [];
    const done = subs.filter((x) => x.status === "completed").length;
    head.replaceChildren(
      h("h1", {}, id, " ", status(s ? s.status : "waiting")),
      h("p", { id: "description" }, t.description),
      h("div", { class: "rowflex muted" },
        s ? [`phase ${s.phase}`, " · ", `plan ${s.plan_status || "none"} v${s.plan_version || 0}`,
          s.amendment ? [" · ", h("span", { id: "amendment-note" }, `amendment v${s.amendment.version} awaits review`)] : "", " · ", progress(done, subs.length),
          " · ", `updated ${ago(s.last_updated)}`, " · ", `revisions ${s.revision_count}`] : "no state yet: is the daemon running?"),
      ...(view.state_error ? [error(view.state_error)] : []));
    renderActions();
  }

  function reviewForm(label, idPrefix, send) {
    const notes = h("textarea", { id: idPrefix + "-notes", placeholder: "notes for the agents (optional)" });
    const msg = h("span", { class: "muted" });
    const act = (verdict) => async () => {
      msg.textContent = "…";
      try { await send(verdict, notes.value); msg.textContent = "sent: the daemon applies it"; }
      catch (e) { msg.textContent = e.message; msg.className = "error"; }
    };
    return h("div", { class: "box attn" }, h("h3", {}, label), notes,
      h("div", { class: "rowflex" },
        h("button", { class: "primary", id: idPrefix + "-approve", onclick: act("approved") }, "Approve"),
        h("button", { id: idPrefix + "-send-back", onclick: act("revision_needed") }, "Send back"), msg));
  }

  function renderActions() {
    const s = view.state;
    const out = [];
    if (!readOnly && s) {
      if (s.plan_status === "proposed") {
        out.push(reviewForm(`Plan v${s.plan_version} awaits review`, "plan", (verdict, notes) => post(base + "/plan/review", { verdict, notes })));
      }
      if (s.amendment) {
        out.push(reviewForm(`Amendment v${s.amendment.version} of the running plan v${s.plan_version} awaits review: ${amendmentWords(s.amendment)}`, "amendment",
          (verdict, notes) => post(base + "/plan/review", { verdict, notes })));
      }
      for (const [cp, c] of Object.entries(s.checkpoints || {})) {
        if (c.status === "awaiting_review") {
          out.push(reviewForm(`Checkpoint ${cp} awaits review`, "cp-" + cp, (verdict, notes) =>
            post(base + "/checkpoints/" + encodeURIComponent(cp) + "/review", { verdict, notes })));
        }
      }
      // Escalations not yet answered by a human's review of their target.
      const answered = new Set(events.filter((e) => e.event === "review_recorded" && (e.attrs || {}).reviewer === "human").map((e) => e.attrs.target));
      for (const e of events.filter((e) => e.event === "escalated" && !answered.has((e.args && e.args[0]) || id)).slice(-3)) {
        const target = (e.args && e.args[0]) || id;
        const notes = h("textarea", { placeholder: "your answer" });
        const msg = h("span", { class: "muted" });
        out.push(h("div", { class: "box attn" }, h("h3", {}, `Escalated by ${(e.attrs || {}).agent || "?"} about ${target}`),
          h("p", {}, (e.attrs || {}).reason || ""), notes,
          h("div", { class: "rowflex" }, h("button", { class: "primary", onclick: async () => {
            try { await post(base + "/escalations/review", { target, verdict: "approved", notes: notes.value }); msg.textContent = "answer sent"; }
            catch (err) { msg.textContent = err.message; }
          } }, "Answer"), msg)));
      }
      if (!["completed", "failed", "cancelled"].includes(s.status)) {
        const reason = h("input", { type: "text", id: "cancel-reason", placeholder: "reason" });
        const msg = h("span", { class: "muted" });
        out.push(h("div", { class: "rowflex" }, reason, h("button", { class: "danger", id: "cancel", onclick: async () => {
          if (!confirm("Cancel task " + id + "?")) return;
          try { await post(base + "/cancel", { reason: reason.value }); msg.textContent = "cancel sent"; } catch (e) { msg.textContent = e.message; }
        } }, "Cancel task"), msg));
      }
    }
    actions.replaceChildren(...out);
  }

  // ---- panels

  function renderBoard(s = view.state, planDoc = view.plan, withTables = true) {
    if (!s || !s.subtasks || !Object.keys(s.subtasks).length) return [h("p", { class: "muted" }, "No subtasks yet: the plan is not approved.")];
    const plan = new Map(((planDoc && planDoc.subtasks) || []).map((x) => [x.id, x]));
    const cols = Object.fromEntries(COLS.map((c) => [c, []]));
    for (const [sid, ss] of Object.entries(s.subtasks)) (cols[ss.status] || (cols[ss.status] = [])).push([sid, ss]);
    const board = h("div", { class: "board", id: "board" }, Object.entries(cols).map(([c, items]) =>
      h("div", { class: "col", "data-col": c }, h("h3", {}, `${c.replace("_", " ")} (${items.length})`),
        items.sort((a, b) => a[0].localeCompare(b[0], undefined, { numeric: true })).map(([sid, ss]) =>
          h("div", { class: "card", "data-subtask": sid, "data-status": ss.status },
            h("div", { class: "id" }, sid),
            plan.get(sid) ? h("div", {}, plan.get(sid).description) : null,
            h("div", { class: "meta" }, [ss.worker ? `worker ${ss.worker}` : "", ss.started_at ? ` · started ${fmtTime(ss.started_at)}` : "",
              ss.completed_at ? ` · done ${fmtTime(ss.completed_at)}` : "", ss.attempts ? ` · attempts ${ss.attempts}` : ""].join("")),
            ss.error ? h("div", { class: "error" }, ss.error) : null)))));
    return withTables ? [board, renderCheckpoints(), renderWorkers()] : [board];
  }

  function renderCheckpoints() {
    const cps = Object.entries((view.state && view.state.checkpoints) || {});
    if (!cps.length) return null;
    const plan = new Map(((view.plan && view.plan.checkpoints) || []).map((c) => [c.id, c]));
    return h("div", {}, h("h2", {}, "Checkpoints"), h("table", { id: "checkpoints" },
      h("tr", {}, ["checkpoint", "status", "subtasks", "reached", "reviewed", "review"].map((t) => h("th", {}, t))),
      cps.map(([cid, c]) => h("tr", {}, h("td", {}, cid, plan.get(cid) && plan.get(cid).description ? h("div", { class: "muted" }, plan.get(cid).description) : null),
        h("td", {}, status(c.status)), h("td", {}, ((plan.get(cid) || {}).subtasks || []).join(", ")),
        h("td", {}, fmtTime(c.reached_at)), h("td", {}, fmtTime(c.reviewed_at)), h("td", {}, c.review || "")))));
  }

  function renderWorkers() {
    const ws = Object.entries((view.state && view.state.workers) || {});
    if (!ws.length) return null;
    return h("div", {}, h("h2", {}, "Workers"), h("table", { id: "workers" },
      h("tr", {}, h("th", {}, "worker"), h("th", {}, "status"), h("th", {}, "on")),
      ws.map(([w, x]) => h("tr", {}, h("td", {}, w), h("td", {}, status(x.status)), h("td", {}, x.current_task || "")))));
  }

  // amendmentWords says what an amendment (a plan_amended event's attrs,
  // or the state's amendment) does.
  function amendmentWords(a) {
    const list = (x) => (Array.isArray(x) ? x : (x || "").split(",")).filter(Boolean);
    return [["adds", a.added], ["changes", a.changed], ["withdraws", a.withdrawn]]
      .filter(([, ids]) => list(ids).length).map(([w, ids]) => `${w} ${list(ids).join(", ")}`).join("; ");
  }

  // amendmentMarks are the graph's marks of amendments: the subtasks the
  // last applied amendment added, and those the one awaiting review
  // would change or withdraw.
  function amendmentMarks() {
    const marks = {};
    const last = [...events].reverse().find((e) => e.event === "plan_amended");
    for (const sid of ((last && last.attrs && last.attrs.added) || "").split(",").filter(Boolean)) marks[sid] = "added";
    const a = view.state && view.state.amendment;
    if (a) {
      for (const sid of a.changed || []) marks[sid] = "changing";
      for (const sid of a.withdrawn || []) marks[sid] = "withdrawing";
    }
    return { marks, last };
  }

  // The dependency graph (views.js): columns by depth, arrows from each
  // dependency, checkpoints where they gate, the critical path, and a
  // subtask's details on click; the amendments marked.
  let picked = "";
  function renderGraph() {
    const plan = (view.plan && view.plan.subtasks) || [];
    if (!plan.length) return [h("p", { class: "muted" }, "No plan yet.")];
    const subs = (view.state && view.state.subtasks) || {};
    const detail = h("div", { id: "graph-detail-box" });
    const pick = (sid) => {
      picked = sid;
      const s = plan.find((x) => x.id === sid);
      if (!s) return;
      const dependents = plan.filter((x) => (x.dependencies || []).includes(sid)).map((x) => x.id);
      detail.replaceChildren(WSV.details(s, subs[sid], s.dependencies || [], dependents));
    };
    const { marks, last } = amendmentMarks();
    const g = WSV.graph(plan, view.plan.checkpoints, view.state, pick, undefined, marks);
    if (picked) pick(picked);
    const a = view.state && view.state.amendment;
    const notes = [
      last ? h("p", { class: "amend-note", id: "amended-note" }, `plan v${last.attrs.version} amended v${last.attrs.from}${last.attrs.agent ? " (" + last.attrs.agent + ")" : ""}: ${amendmentWords(last.attrs)}`) : null,
      a ? h("p", { class: "amend-note pending", id: "amendment-graph-note" }, `amendment v${a.version} (${a.proposed_by || "?"}) awaits review: ${amendmentWords(a)}`) : null];
    return [g.caption, ...notes, h("div", { class: "graph-wrap" }, g.svg), detail];
  }


  // planStatus is where plan version v stands by the state the daemon
  // wrote (never plan.json's own word): the state's plan_status for the
  // version it tracks, revision_needed or superseded for an earlier one,
  // "not taken yet" for one the daemon has not read.
  function planStatus(v) {
    const s = view.state;
    if (s && s.amendment && v === s.amendment.version) return "amendment awaiting review";
    if (events.some((e) => e.event === "amendment_rejected" && (e.attrs || {}).version === String(v))) return "amendment sent back";
    if (!s || !s.plan_version || v > s.plan_version) return "not taken yet";
    if (v === s.plan_version) return s.plan_status || "none";
    const sentBack = events.some((e) => e.event === "plan_revision_needed" && (e.attrs || {}).version === String(v));
    return sentBack ? "revision_needed" : "superseded";
  }

  async function renderPlan() {
    const { versions } = await api(base + "/plans");
    if (!versions.length) return [h("p", { class: "muted" }, "No plan yet.")];
    const pick = (sel, v) => { sel.replaceChildren(...versions.map((p) => h("option", { value: p.version, selected: p.version === v }, `v${p.version} (${planStatus(p.version)})`))); return sel; };
    const cur = versions[versions.length - 1];
    const from = pick(h("select", { id: "diff-from" }), versions.length > 1 ? versions[versions.length - 2].version : cur.version);
    const to = pick(h("select", { id: "diff-to" }), cur.version);
    const out = h("div", { class: "diff", id: "plan-diff" });
    const show = async () => {
      try { out.replaceChildren(...WSV.planDiff(await api(`${base}/plans/diff?from=${+from.value}&to=${+to.value}`)).flat(Infinity).filter(Boolean)); }
      catch (e) { out.replaceChildren(error(e.message)); }
    };
    from.addEventListener("change", show); to.addEventListener("change", show);
    await show();
    return [
      h("div", { class: "box" }, h("h3", { id: "plan-title" }, `Plan v${cur.version} `, status(planStatus(cur.version))), cur.summary ? h("p", {}, cur.summary) : null,
        h("table", {}, h("tr", {}, ["subtask", "description", "depends on", "complexity"].map((t) => h("th", {}, t))),
          cur.subtasks.slice(0, 500).map((s) => h("tr", {}, h("td", {}, s.id), h("td", {}, s.description), h("td", {}, (s.dependencies || []).join(", ")), h("td", {}, s.estimated_complexity || "")))),
        cur.subtasks.length > 500 ? h("p", { class: "muted" }, `… and ${cur.subtasks.length - 500} more (raw JSON has them all)`) : null,
        rawToggle(cur)),
      h("h3", {}, "What changed between versions"), h("div", { class: "controls" }, "from ", from, " to ", to), out];
  }

  function outputView(o) {
    return h("div", { class: "box" }, h("h3", {}, `Output of ${o.subtask_id} `, status(o.status || "completed")),
      h("div", { class: "kv-grid" }, ["worker_id", "completed_at", "summary", "error"].filter((k) => o[k]).map((k) => [h("span", { class: "muted" }, k), h("span", {}, k.endsWith("_at") ? fmtTime(o[k]) : o[k])]).flat(),
        ["files_created", "files_modified", "decisions"].filter((k) => o[k] && o[k].length).map((k) => [h("span", { class: "muted" }, k), h("span", {}, o[k].join(", "))]).flat()),
      o.code ? Object.entries(o.code).map(([f, c]) => h("div", {}, h("div", { class: "mono" }, f), h("pre", {}, c))) : null,
      rawToggle(o));
  }

  // outputWithHistory is an output, and when earlier versions were kept
  // (a failed attempt, a rewrite), what changed between two of them.
  async function outputWithHistory(sid) {
    const path = base + "/outputs/" + encodeURIComponent(sid);
    const { versions } = await api(path + "/history");
    const cur = versions[versions.length - 1];
    const nodes = [outputView(cur.doc)];
    if (versions.length > 1) {
      const label = (v) => (v === 0 ? "current" : `v${v}`);
      const pick = (id, v) => h("select", { id }, versions.map((x) => h("option", { value: x.version, selected: x.version === v }, label(x.version))));
      const from = pick("out-from", versions[versions.length - 2].version), to = pick("out-to", cur.version);
      const out = h("div", { class: "diff", id: "output-diff" });
      const show = async () => {
        try { out.replaceChildren(...WSV.docDiff(await api(`${path}/diff?from=${+from.value}&to=${+to.value}`))); } catch (e) { out.replaceChildren(error(e.message)); }
      };
      from.addEventListener("change", show); to.addEventListener("change", show);
      await show();
      nodes.push(h("h3", {}, `${versions.length - 1} earlier version${versions.length > 2 ? "s" : ""} kept`), h("div", { class: "controls" }, "from ", from, " to ", to), out);
    }
    return nodes;
  }

  async function renderOutputs() {
    const { reviews, skipped } = await api(base + "/reviews");
    const subs = Object.entries((view.state && view.state.subtasks) || {}).filter(([, s]) => s.output);
    const outBox = h("div", { id: "output-view" });
    return [h("h2", {}, "Outputs"), subs.length ? h("table", { id: "outputs" }, subs.slice(0, 1000).map(([sid, s]) => h("tr", {},
      h("td", {}, sid), h("td", {}, status(s.status)), h("td", {}, s.output),
      h("td", {}, h("button", { "data-output": sid, onclick: async () => {
        try { outBox.replaceChildren(...await outputWithHistory(sid)); } catch (e) { outBox.replaceChildren(error(e.message)); }
      } }, "show"))))) : h("p", { class: "muted" }, "No outputs yet."), outBox,
    h("h2", {}, "Reviews"), reviews.length ? h("div", { id: "reviews" }, reviews.map((r) => h("div", { class: "box" },
      h("h3", {}, `${r.id} · ${r.type} of ${r.target || "?"} `, status(r.verdict)),
      h("div", { class: "muted" }, `by ${r.reviewer || "?"} ${fmtTime(r.reviewed_at)}`),
      r.notes ? h("p", {}, r.notes) : null, r.escalate ? h("p", { class: "error" }, "escalated: ", r.escalate) : null,
      (r.issues || []).length ? h("ul", {}, r.issues.map((i) => h("li", {}, `[${i.severity || "?"}] ${i.problem}`, i.suggestion ? ` → ${i.suggestion}` : ""))) : null,
      rawToggle(r)))) : h("p", { class: "muted" }, "No reviews yet."),
    (skipped || []).length ? h("div", {}, h("h3", {}, "Files passed over"), skipped.map((s) => h("div", { class: "error" }, `${s.file}: ${s.reason}`))) : null];
  }

  async function renderThreads() {
    const threads = await api(base + "/threads");
    const kids = new Map();
    for (const t of threads) { const p = t.parent_id || ""; if (!kids.has(p)) kids.set(p, []); kids.get(p).push(t); }
    const ids = new Set(threads.map((t) => t.id));
    const node = (t) => h("li", { "data-thread": t.id },
      h("div", {}, h("span", { class: "tid" }, t.id), " ", `${t.from} → ${t.to} `, status(t.status), t.progress ? h("span", { class: "muted" }, ` · ${t.progress}`) : null),
      t.message ? h("div", { class: "muted" }, t.message) : null,
      kids.has(t.id) ? h("ul", {}, kids.get(t.id).map(node)) : null);
    const roots = threads.filter((t) => !t.parent_id || !ids.has(t.parent_id));
    return [h("div", { class: "tree", id: "threads" }, h("ul", {}, roots.map(node))), rawToggle(threads)];
  }

  // entryTable lists entries (env data, or the session of thread); a
  // row's button shows the value read from path + key in out, with the
  // events that wrote it.
  function entryTable(tid, items, path, out, thread) {
    const ofEntry = (x, key) => x.attrs && x.attrs.key === key &&
      (thread ? /^memory_/.test(x.event) && x.attrs.thread === thread : /^env_/.test(x.event));
    return h("table", { id: tid }, h("tr", {}, ["key", "description", "stored by", "version", "size", "updated", ""].map((t) => h("th", {}, t))),
      items.map((it) => h("tr", {}, h("td", { class: "mono" }, it.key), h("td", {}, it.short_description), h("td", {}, it.stored_by),
        h("td", {}, String(it.version)), h("td", {}, `${it.size} B`), h("td", {}, fmtTime(it.updated_at)),
        h("td", {}, h("button", { "data-key": it.key, onclick: async () => {
          try {
            const e = await api(path + encodeURIComponent(it.key));
            const hist = events.filter((x) => ofEntry(x, it.key));
            out.replaceChildren(h("h3", {}, it.key, ` (version ${e.version})`), h("pre", {}, JSON.stringify(e.value, null, 2)),
              h("h3", {}, "History"), h("table", {}, hist.map((x) => h("tr", {}, h("td", {}, fmtTime(x.time)), h("td", {}, x.event),
                h("td", {}, `version ${x.attrs.version || "?"}`), h("td", {}, x.attrs.agent || "")))));
          } catch (err) { out.replaceChildren(error(err.message)); }
        } }, "value")))));
  }

  // The env data shared by the task's threads, then each thread's private
  // session entries.
  async function renderEnv() {
    const [items, sessions] = await Promise.all([api(base + "/env"), api(base + "/sessions")]);
    const out = h("div", { id: "env-value" });
    return [h("h2", {}, "Env data"), items.length ? entryTable("env", items, base + "/env/", out) : h("p", { class: "muted", id: "env" }, "No env data."),
      h("h2", {}, "Session entries"), sessions.length ? h("div", { id: "sessions" }, sessions.map((s) => [h("h3", {}, "Thread ", s.thread),
        entryTable("session-" + s.thread, s.items, base + "/sessions/" + encodeURIComponent(s.thread) + "/", out, s.thread)]))
        : h("p", { class: "muted", id: "sessions" }, "No session entries."),
      out];
  }

  // The journal: every marker the daemon took, with its verdict as the
  // state tells it (won, lost, applied, refused, not_found; taken while
  // the state does not reflect it yet) and the reason of a refusal.
  async function renderJournal() {
    const recs = await api(base + "/journal");
    if (!recs.length) return [h("p", { class: "muted" }, "The journal is empty.")];
    return [h("table", { id: "journal" }, h("tr", {}, ["seq", "taken", "kind", "agent", "subtask", "marker", "verdict"].map((t) => h("th", {}, t))),
      recs.slice(-2000).reverse().map((r) => h("tr", { "data-seq": r.seq, "data-verdict": r.verdict }, h("td", {}, String(r.seq)), h("td", {}, fmtTime(r.taken_at)), h("td", {}, r.kind),
        h("td", {}, r.marker.agent_id), h("td", {}, r.marker.subtask_id || (r.plan ? "plan v" + r.plan.version : r.review ? "review " + r.review.id : "")),
        h("td", { class: "mono" }, r.file), h("td", {}, status(r.verdict), r.reason ? h("span", { class: "muted" }, " ", r.reason) : null))))];
  }

  async function renderBackups() {
    const bs = await api(base + "/backups");
    if (!bs.length) return [h("p", { class: "muted" }, "No backups.")];
    return [h("table", { id: "backups" }, h("tr", {}, h("th", {}, "file"), h("th", {}, "taken"), h("th", {}, "size")),
      bs.map((b) => h("tr", {}, h("td", { class: "mono" }, b.name), h("td", {}, fmtTime(b.time)), h("td", {}, `${b.size} B`))))];
  }

  // Time: each attempt at a subtask as a bar in its worker's row, from
  // the journal's fold.
  async function renderTime() {
    const { spans } = await api(base + "/gantt");
    return WSV.gantt(spans);
  }

  // Replay: the board as the journal had it after record N, folded by
  // the server.
  async function renderReplay() {
    const recs = await api(base + "/journal");
    if (!recs.length) return [h("p", { class: "muted" }, "The journal is empty: nothing to replay yet.")];
    const last = recs[recs.length - 1].seq;
    const range = h("input", { type: "range", id: "replay-seq", min: 0, max: last, value: last, step: 1 });
    const label = h("div", { id: "replay-label", class: "rowflex" });
    const out = h("div", { id: "replay-board" });
    const bySeq = new Map(recs.map((r) => [r.seq, r]));
    const show = coalesce(async () => {
      const n = +range.value;
      const v = await api(`${base}/state?seq=${n}`);
      if (+range.value !== n) return; // a newer position is on its way
      const r = bySeq.get(n);
      label.replaceChildren(h("b", {}, `record ${n} of ${last}`),
        r ? `${fmtTime(r.taken_at)} · ${r.kind} by ${r.marker.agent_id}${r.marker.subtask_id ? " on " + r.marker.subtask_id : ""} ·` : "before the first record ·",
        status(v.state.status), r ? status(r.verdict) : null);
      out.replaceChildren(...renderBoard(v.state, v.plan, false).filter(Boolean));
      out.dataset.seq = String(n);
    });
    const step = (d) => h("button", { onclick: () => { range.value = String(Math.min(last, Math.max(0, +range.value + d))); show(); } }, d < 0 ? "◀" : "▶");
    range.addEventListener("input", show);
    await show();
    return [h("div", { class: "controls replay" }, step(-1), range, step(1)), label, out];
  }

  // Search: the task's events, outputs and env data, on the server.
  let lastQuery = "";
  function marked(text, q) {
    const i = text.toLowerCase().indexOf(q.toLowerCase());
    return i < 0 ? [text] : [text.slice(0, i), h("mark", {}, text.slice(i, i + q.length)), text.slice(i + q.length)];
  }
  function renderSearch() {
    const input = h("input", { type: "search", id: "task-search", placeholder: "search this task's events, outputs and env data", value: lastQuery });
    const out = h("div", { id: "search-results" });
    const run = coalesce(async () => {
      const q = (lastQuery = input.value.trim());
      if (!q) { out.replaceChildren(); return; }
      let r;
      try { r = await api(`${base}/search?limit=100&q=${encodeURIComponent(q)}`); } catch (e) { out.replaceChildren(error(e.message)); return; }
      if (input.value.trim() !== q) return;
      out.replaceChildren(h("p", { class: "muted", id: "search-count" }, r.hits.length ? `${r.hits.length}${r.more ? "+" : ""} places` : "Found nowhere."),
        r.hits.length ? h("table", { id: "search-hits" }, h("tr", {}, ["in", "which", "field", "text"].map((t) => h("th", {}, t))),
          r.hits.map((x) => h("tr", { "data-kind": x.kind, "data-ref": x.ref }, h("td", {}, x.kind), h("td", { class: "mono" }, x.ref),
            h("td", { class: "mono" }, x.field), h("td", {}, marked(x.text, q))))) : null);
      out.dataset.query = q;
    });
    let timer;
    input.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(run, 200); });
    if (lastQuery) run();
    setTimeout(() => input.focus(), 0);
    return [h("div", { class: "controls" }, input), out];
  }

  const renderers = { board: renderBoard, graph: renderGraph, time: renderTime, replay: renderReplay, search: renderSearch, plan: renderPlan,
    outputs: renderOutputs, threads: renderThreads, env: renderEnv, journal: renderJournal, backups: renderBackups };
  let panelGen = 0;
  async function renderPanel() {
    const gen = ++panelGen;
    try {
      const nodes = await (renderers[tab] || renderBoard)();
      if (!Array.isArray(nodes)) throw new Error("no view");
      if (gen === panelGen) { panel.replaceChildren(...nodes.filter(Boolean)); panel.dataset.tab = tab; }
    } catch (e) { if (gen === panelGen) panel.replaceChildren(error(e.message)); }
  }

  // ---- timeline
  function evRow(e, fresh) {
    const kv = Object.entries(e.attrs || {}).map(([k, v]) => h("span", { class: "kv" }, `${k}=${v}`));
    return h("div", { class: "ev" + (fresh ? " fresh" : ""), "data-id": e.id, "data-event": e.event },
      h("span", { class: "t", title: fmtTime(e.time) }, fmtTime(e.time).slice(11)), h("span", { class: "n" }, e.event), (e.args || []).map((a) => h("span", { class: "kv" }, a)), kv);
  }
  const matches = (e) => (!filters.kind || e.event === filters.kind) && (!filters.agent || (e.attrs && e.attrs.agent === filters.agent));
  function renderFilters() {
    const kinds = [...new Set(events.map((e) => e.event))].sort(), agents = [...new Set(events.map((e) => e.attrs && e.attrs.agent).filter(Boolean))].sort();
    kindSel.replaceChildren(h("option", { value: "" }, "every kind"), ...kinds.map((k) => h("option", { value: k, selected: k === filters.kind }, k)));
    agentSel.replaceChildren(h("option", { value: "" }, "every agent"), ...agents.map((k) => h("option", { value: k, selected: k === filters.agent }, k)));
  }
  // Runs of refused claims (a race lost by several agents) fold into one
  // line.
  const byId = new Map();
  const rowOf = (item, fresh) => (item.fold ? WSV.foldRow(item.fold, (e) => evRow(e, false)) : evRow(item.e, fresh));
  function renderTimeline() {
    const frag = document.createDocumentFragment();
    const shown = [];
    for (let i = events.length - 1; i >= 0; i--) if (matches(events[i])) shown.push(events[i]);
    for (const item of WSV.foldRuns(shown)) frag.append(rowOf(item, false));
    tlList.replaceChildren(frag);
    tlCount.textContent = `(${events.length})`;
    renderFilters();
  }
  let filtersDirty = false;
  function addEvent(e) {
    if (seen.has(e.id)) return;
    seen.add(e.id);
    byId.set(e.id, e);
    events.push(e);
    if (matches(e)) {
      const top = tlList.firstElementChild;
      if (e.event === "claim_refused" && top && top.dataset.event === "claim_refused") {
        const prev = (top.dataset.ids || top.dataset.id || "").split(" ").map((x) => byId.get(x)).filter(Boolean);
        top.replaceWith(WSV.foldRow([e, ...prev], (x) => evRow(x, false)));
      } else tlList.prepend(evRow(e, true));
    }
    tlCount.textContent = `(${events.length})`;
    if (!filtersDirty) { filtersDirty = true; requestAnimationFrame(() => { filtersDirty = false; renderFilters(); }); }
  }

  window.addEventListener("hashchange", () => {
    const k = location.hash.slice(1);
    if (k && k !== tab && renderers[k]) { tab = k; renderTabs(); renderPanel(); }
  });

  // ---- load, then follow
  const reload = coalesce(async () => {
    view = await api(base);
    renderHead();
    if (tab === "board" || tab === "graph") await renderPanel();
    document.body.dataset.state = view.state ? view.state.journal_seq : "";
  });

  (async () => {
    let page;
    try {
      [view, page] = await Promise.all([api(base), api(base + "/events")]);
    } catch (e) { main.replaceChildren(error(e.message)); return; }
    document.title = id + " · workspaced";
    main.replaceChildren(...layout);
    for (const e of page.events) { seen.add(e.id); byId.set(e.id, e); events.push(e); }
    renderTabs(); renderHead(); renderTimeline(); await renderPanel();
    document.body.dataset.loaded = "1";
    performance.mark("ws-loaded");
    stream(base + "/events?after=" + page.next, {
      ev: (e) => addEvent(e),
      changed: () => reload(),
      fault: (e) => tlList.prepend(error(e.error)),
    });
  })();
})();
