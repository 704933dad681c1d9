// The tasks page: one page of tasks at a time, in id order, filtered by
// status and text on the server (which reads only the page's summaries),
// refreshed when a task changes. Pages go by cursor: after= the last id
// of the page before.
"use strict";
(() => {
  const { h, api, stream, coalesce, fmtTime, ago, status, progress, error } = WS;
  const main = document.getElementById("main");
  const params = new URLSearchParams(location.search);
  const st = { status: params.get("status") || "", q: params.get("q") || "", after: params.get("after") || "", limit: 100 };
  const back = []; // the cursors of the pages before this one

  const search = h("input", { type: "search", id: "search", placeholder: "search id or description", value: st.q });
  const filter = h("select", { id: "status-filter" });
  const info = h("span", { class: "muted", id: "count" });
  let nextCursor = "";
  const prev = h("button", { id: "prev", onclick: () => { st.after = back.pop() || ""; refresh(); } }, "← previous");
  const next = h("button", { id: "next", onclick: () => { back.push(st.after); st.after = nextCursor; refresh(); } }, "next →");
  const tbody = h("tbody", { id: "tasks" });
  main.replaceChildren(
    h("h1", {}, "Tasks"),
    h("div", { class: "controls" }, search, filter, info, prev, next),
    h("table", {}, h("thead", {}, h("tr", {}, ["task", "description", "status", "phase", "progress", "last update"].map((t) => h("th", {}, t)))), tbody),
  );
  let timer;
  search.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(() => { st.q = search.value; st.after = ""; back.length = 0; refresh(); }, 200); });
  filter.addEventListener("change", () => { st.status = filter.value; st.after = ""; back.length = 0; refresh(); });

  function row(t) {
    return h("tr", { "data-task": t.id },
      h("td", {}, h("a", { href: "/tasks/" + encodeURIComponent(t.id) }, t.id)),
      h("td", {}, t.description, t.error ? h("div", { class: "error", text: t.error }) : null),
      h("td", {}, status(t.status)),
      h("td", { class: "muted" }, t.phase || ""),
      h("td", {}, progress(t.subtasks_done, t.subtasks_total)),
      h("td", { title: fmtTime(t.last_updated) }, ago(t.last_updated)));
  }

  const refresh = coalesce(async () => {
    const q = new URLSearchParams({ after: st.after, limit: st.limit });
    if (st.status) q.set("status", st.status);
    if (st.q) q.set("q", st.q);
    history.replaceState(null, "", "?" + q.toString());
    let page;
    try { page = await api("/api/tasks?" + q); } catch (e) { tbody.replaceChildren(h("tr", {}, h("td", { colspan: 6 }, error(e.message)))); return; }
    const all = Object.values(page.counts).reduce((a, b) => a + b, 0);
    filter.replaceChildren(h("option", { value: "" }, `every status (${all})`),
      ...Object.keys(page.counts).sort().map((s) => h("option", { value: s, selected: s === st.status }, `${s} (${page.counts[s]})`)));
    const matching = st.status ? page.counts[st.status] || 0 : all;
    const first = back.length * st.limit;
    info.textContent = page.tasks.length ? `${first + 1}–${first + page.tasks.length} of ${matching}` : "no tasks";
    nextCursor = page.next || "";
    prev.disabled = !st.after;
    next.disabled = !nextCursor;
    const frag = document.createDocumentFragment();
    for (const t of page.tasks) frag.append(row(t));
    tbody.replaceChildren(frag);
    if (!document.body.dataset.loaded) performance.mark("ws-loaded");
    document.body.dataset.loaded = "1";
  });
  refresh();
  stream("/api/events?events=0", { task: () => refresh(), reset: () => refresh() });
})();
