// The tasks page: one page of tasks at a time from the server's summary
// index, filtered by status and text, refreshed when a task changes.
"use strict";
(() => {
  const { h, api, stream, coalesce, fmtTime, ago, status, progress, error } = WS;
  const main = document.getElementById("main");
  const params = new URLSearchParams(location.search);
  const st = { status: params.get("status") || "", q: params.get("q") || "", offset: +params.get("offset") || 0, limit: 100 };

  const search = h("input", { type: "search", id: "search", placeholder: "search id or description", value: st.q });
  const filter = h("select", { id: "status-filter" });
  const info = h("span", { class: "muted", id: "count" });
  const prev = h("button", { id: "prev", onclick: () => { st.offset = Math.max(0, st.offset - st.limit); refresh(); } }, "← newer");
  const next = h("button", { id: "next", onclick: () => { st.offset += st.limit; refresh(); } }, "older →");
  const tbody = h("tbody", { id: "tasks" });
  main.replaceChildren(
    h("h1", {}, "Tasks"),
    h("div", { class: "controls" }, search, filter, info, prev, next),
    h("table", {}, h("thead", {}, h("tr", {}, ["task", "description", "status", "phase", "progress", "last update"].map((t) => h("th", {}, t)))), tbody),
  );
  let timer;
  search.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(() => { st.q = search.value; st.offset = 0; refresh(); }, 200); });
  filter.addEventListener("change", () => { st.status = filter.value; st.offset = 0; refresh(); });

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
    const q = new URLSearchParams({ offset: st.offset, limit: st.limit });
    if (st.status) q.set("status", st.status);
    if (st.q) q.set("q", st.q);
    history.replaceState(null, "", "?" + q.toString());
    let page;
    try { page = await api("/api/tasks?" + q); } catch (e) { tbody.replaceChildren(h("tr", {}, h("td", { colspan: 6 }, error(e.message)))); return; }
    const all = Object.values(page.counts).reduce((a, b) => a + b, 0);
    filter.replaceChildren(h("option", { value: "" }, `every status (${all})`),
      ...Object.keys(page.counts).sort().map((s) => h("option", { value: s, selected: s === st.status }, `${s} (${page.counts[s]})`)));
    info.textContent = page.total ? `${page.offset + 1}–${page.offset + page.tasks.length} of ${page.total}` : "no tasks";
    prev.disabled = page.offset === 0;
    next.disabled = page.offset + page.tasks.length >= page.total;
    const frag = document.createDocumentFragment();
    for (const t of page.tasks) frag.append(row(t));
    tbody.replaceChildren(frag);
    if (!document.body.dataset.loaded) performance.mark("ws-loaded");
    document.body.dataset.loaded = "1";
  });
  refresh();
  stream("/api/events?events=0", { task: () => refresh(), reset: () => refresh() });
})();
