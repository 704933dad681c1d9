// The memory page: the global memory and each agent's, by scope, with
// descriptions, and each value on demand; then the namespaced memory, its
// namespaces and the items under the one picked. A thread's session
// entries are on its task's page (Env data).
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

  // The namespace picked (its labels), kept across refreshes.
  let picked = null;
  const items = h("div", { id: "namespace-items" });
  const query = (ns) => ns.map((l) => "namespace=" + encodeURIComponent(l)).join("&");

  async function showItems(ns) {
    picked = ns;
    let list;
    try { list = await api("/api/memory/items?" + query(ns)); } catch (e) { items.replaceChildren(error(e.message)); return; }
    const rows = list.map((it) => h("tr", { "data-key": it.key },
      h("td", { class: "mono" }, it.namespace.join(" / ")), h("td", { class: "mono" }, it.key), h("td", {}, String(it.version)),
      h("td", {}, fmtTime(it.updated_at)), h("td", {}, it.expires_at ? fmtTime(it.expires_at) : "never"),
      h("td", {}, h("button", { onclick: () => out.replaceChildren(h("h3", {}, it.namespace.join(" / ") + " : " + it.key),
        h("pre", {}, JSON.stringify(it.value, null, 2))) }, "value"))));
    items.replaceChildren(h("h3", {}, "Under ", ns.join(" / ")), list.length
      ? h("table", {}, h("tr", {}, ["namespace", "key", "version", "updated", "expires", ""].map((t) => h("th", {}, t))), rows)
      : h("p", { class: "muted" }, "no items"));
  }

  function namespaces(nss) {
    if (!nss.length) return h("p", { class: "muted" }, "none");
    return h("ul", { class: "namespaces" }, nss.map((ns) => h("li", {},
      h("button", { class: "mono", "data-namespace": JSON.stringify(ns), onclick: () => showItems(ns) }, ns.join(" / ")))));
  }

  const refresh = coalesce(async () => {
    let m, nss;
    try { [m, nss] = await Promise.all([api("/api/memory"), api("/api/memory/namespaces")]); } catch (e) { main.replaceChildren(error(e.message)); return; }
    main.replaceChildren(h("h1", {}, "Memory"),
      h("div", { class: "layout" }, h("div", { id: "scopes" },
        h("section", { "data-scope": "global" }, h("h2", {}, "Global"), h("p", { class: "muted" }, "shared by every agent and task"), table(m.global, "/api/memory/global/")),
        Object.keys(m.agents).sort().map((a) => h("section", { "data-agent": a }, h("h2", {}, "Agent ", a),
          table(m.agents[a], "/api/memory/agents/" + encodeURIComponent(a) + "/"))),
        h("section", { id: "namespaces" }, h("h2", {}, "Namespaces"),
          h("p", { class: "muted" }, "items under a namespace of labels, shared by every agent"), namespaces(nss), items),
        h("p", { class: "muted" }, "A thread's session entries are on its task's page, under Env data.")),
      out));
    if (picked) showItems(picked);
    document.body.dataset.loaded = "1";
  });
  refresh();
  stream("/api/events?events=0", { memory: () => refresh(), reset: () => refresh() });
})();
