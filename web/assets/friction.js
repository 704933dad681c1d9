// The friction page: the log with occurrences and affected tasks; a
// pending entry can be resolved (applied or dismissed).
"use strict";
(() => {
  const { h, api, post, stream, coalesce, fmtTime, status, error, readOnly } = WS;
  const main = document.getElementById("main");
  const filter = h("select", { id: "friction-status" }, ["", "pending", "applied", "dismissed"].map((s) => h("option", { value: s }, s || "every status")));
  const body = h("tbody", { id: "friction" });
  main.replaceChildren(h("h1", {}, "Friction"), h("div", { class: "controls" }, filter),
    h("table", {}, h("tr", {}, ["id", "type", "status", "occurrences", "tasks", "description", "recorded", ""].map((t) => h("th", {}, t))), body));
  filter.addEventListener("change", () => refresh());

  const resolve = (fid, st) => async (ev) => {
    ev.target.disabled = true;
    try { await post("/api/friction/" + encodeURIComponent(fid) + "/resolve", { status: st }); await refresh(); }
    catch (e) { ev.target.after(error(e.message)); }
  };

  const refresh = coalesce(async () => {
    let entries;
    try { entries = await api("/api/friction" + (filter.value ? "?status=" + encodeURIComponent(filter.value) : "")); }
    catch (e) { body.replaceChildren(h("tr", {}, h("td", { colspan: 8 }, error(e.message)))); return; }
    body.replaceChildren(...entries.map((e) => h("tr", { "data-friction": e.id },
      h("td", {}, e.id), h("td", {}, e.type), h("td", {}, status(e.status)), h("td", {}, String(e.occurrences)),
      h("td", {}, (e.affected_tasks || []).map((t) => [h("a", { href: "/tasks/" + encodeURIComponent(t) }, t), " "])),
      h("td", {}, e.description, e.pattern ? h("div", { class: "muted" }, "pattern: ", e.pattern) : null,
        e.suggested_action ? h("div", { class: "muted" }, "suggested: ", e.suggested_action) : null),
      h("td", {}, fmtTime(e.timestamp)),
      h("td", {}, !readOnly && e.status === "pending" ? [h("button", { "data-resolve": "applied", onclick: resolve(e.id, "applied") }, "applied"), " ",
        h("button", { "data-resolve": "dismissed", onclick: resolve(e.id, "dismissed") }, "dismiss")] : null))));
    document.body.dataset.loaded = "1";
  });
  refresh();
  stream("/api/events?events=0", { friction: () => refresh(), reset: () => refresh() });
})();
