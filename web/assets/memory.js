// The memory page: the global memory and each agent's, by scope, with
// descriptions, and each value on demand. A thread's session entries are
// on its task's page (Env data).
"use strict";
(() => {
  const { h, api, stream, coalesce, fmtTime, error } = WS;
  const main = document.getElementById("main");
  const out = h("div", { id: "memory-value" });

  function table(items, path) {
    if (!items.length) return h("p", { class: "muted" }, "empty");
    return h("table", {}, h("tr", {}, ["key", "description", "stored by", "version", "size", "updated", ""].map((t) => h("th", {}, t))),
      items.map((it) => h("tr", {}, h("td", { class: "mono" }, it.key), h("td", {}, it.short_description), h("td", {}, it.stored_by),
        h("td", {}, String(it.version)), h("td", {}, `${it.size} B`), h("td", {}, fmtTime(it.updated_at)),
        h("td", {}, h("button", { "data-key": it.key, onclick: async () => {
          try { const e = await api(path + encodeURIComponent(it.key)); out.replaceChildren(h("h3", {}, it.key), h("pre", {}, JSON.stringify(e.value, null, 2))); }
          catch (err) { out.replaceChildren(error(err.message)); }
        } }, "value")))));
  }

  const refresh = coalesce(async () => {
    let m;
    try { m = await api("/api/memory"); } catch (e) { main.replaceChildren(error(e.message)); return; }
    main.replaceChildren(h("h1", {}, "Memory"),
      h("div", { class: "layout" }, h("div", { id: "scopes" },
        h("section", { "data-scope": "global" }, h("h2", {}, "Global"), h("p", { class: "muted" }, "shared by every agent and task"), table(m.global, "/api/memory/global/")),
        Object.keys(m.agents).sort().map((a) => h("section", { "data-agent": a }, h("h2", {}, "Agent ", a),
          table(m.agents[a], "/api/memory/agents/" + encodeURIComponent(a) + "/"))),
        h("p", { class: "muted" }, "A thread's session entries are on its task's page, under Env data.")),
      out));
    document.body.dataset.loaded = "1";
  });
  refresh();
  stream("/api/events?events=0", { memory: () => refresh(), reset: () => refresh() });
})();
