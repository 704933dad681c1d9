"""The HTTP API (docs/API.md, api/openapi.json) on the standard library's
http.client: one kept-alive connection, JSON in and out, problems as the
typed errors."""

from __future__ import annotations

import http.client
import json
import ssl
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from ._backend import Backend
from . import _sse
from ._common import RawJSON, check_id, value_json, verdict_of
from .errors import Invalid, WorkspacedError, from_problem, read_problem
from .types import Delivery, Entry, EntryInfo, Event, EventPage, MemoryItem

_API = "/api/v1"


def _key(key: str) -> str:
    """A key as a path segment: every byte but letters, digits, '_', '-' and
    '~' escaped, '.' too, so that '.' and '..' are keys, not path steps."""
    return quote(key, safe="").replace(".", "%2E")


def _wait(wait: float | None) -> str | None:
    if wait is None:
        return None
    if not 0 <= wait <= 300:
        raise Invalid("wait %r: a wait is 0 to 300 seconds" % wait, "give a shorter wait", "wait")
    return "%dms" % round(wait * 1000)


def _entry(d: dict[str, Any]) -> Entry:
    return Entry(key=d["key"], value=d.get("value"), version=int(d["version"]),
                 short_description=d.get("short_description", ""), stored_by=d.get("stored_by", ""),
                 created_at=d.get("created_at", ""), updated_at=d.get("updated_at", ""))


def _item(d: dict[str, Any]) -> MemoryItem:
    return MemoryItem(namespace=tuple(d["namespace"]), key=d["key"], value=d.get("value") or {},
                      version=int(d["version"]), created_at=d.get("created_at", ""), updated_at=d.get("updated_at", ""),
                      expires_at=d.get("expires_at"))


def _delivery(d: dict[str, Any]) -> Delivery:
    v = d.get("verdict")
    return Delivery(task_id=d.get("task_id", ""), product=d.get("product", ""), version=int(d.get("version") or 0),
                    marker=d.get("marker", ""), stands=d.get("stands", ""), verdict=verdict_of(v) if v else None,
                    why=d.get("why", ""))


class HTTPBackend(Backend):
    """A listener of workspaced (serve --listen, web, mcp --http), as the
    token's agent (or, on a listener that trusts its machine, the agent
    given)."""

    def __init__(self, root: str, token: str | None, agent: str | None, timeout: float = 60.0) -> None:
        u = urlsplit(root)
        if not u.hostname:
            raise Invalid("root %r names no host" % root, "give http(s)://HOST:PORT")
        self.root = root.rstrip("/")
        self._base = u.path.rstrip("/")
        if self._base.endswith(_API):
            self._base = self._base[:-len(_API)]
        self._host, self._port, self._tls = u.hostname, u.port, u.scheme == "https"
        self._timeout = timeout
        self._token = token
        self._mu = threading.Lock()
        self._conn: http.client.HTTPConnection | None = None
        self._header_agent = check_id("agent", agent) if agent and not token else ""
        me = self._call("GET", "/agent")
        self.agent = str(me["agent"])
        if agent and token and agent != self.agent:
            raise Invalid("agent %r given, but the token is %s's" % (agent, self.agent),
                          "leave agent out: over HTTP the agent is the token's", "agent")

    def close(self) -> None:
        with self._mu:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _connect(self) -> http.client.HTTPConnection:
        if self._conn is None:
            self._conn = self._new_conn(self._timeout)
        return self._conn

    def _new_conn(self, timeout: float | None) -> http.client.HTTPConnection:
        if self._tls:
            return http.client.HTTPSConnection(self._host, self._port, timeout=timeout, context=ssl.create_default_context())
        return http.client.HTTPConnection(self._host, self._port, timeout=timeout)

    def _auth(self) -> dict[str, str]:
        if self._token:
            return {"Authorization": "Bearer " + self._token}
        if self._header_agent:
            return {"Workspace-Agent": self._header_agent}
        return {}

    def _call(self, method: str, path: str, query: list[tuple[str, str]] | None = None, body: Any = None,
              headers: dict[str, str] | None = None, ok404: bool = False, raw_value: RawJSON | None = None) -> Any:
        """One request; body is encoded as JSON, with raw_value's text as its
        member "value" when given (sent as it was written)."""
        url = self._base + _API + path + ("?" + urlencode(query) if query else "")
        h = {"Accept": "application/json"}
        h.update(self._auth())
        data = None
        if body is not None:
            text = json.dumps(body, ensure_ascii=False)
            if raw_value is not None:
                text = '{"value":' + raw_value.text + ("," + text[1:] if len(body) else "}")
            data = text.encode("utf-8")
            h["Content-Type"] = "application/json"
        h.update(headers or {})
        with self._mu:
            for attempt in (0, 1):
                conn = self._connect()
                try:
                    conn.request(method, url, body=data, headers=h)
                    resp = conn.getresponse()
                    raw = resp.read()
                    break
                except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as e:
                    conn.close()
                    self._conn = None
                    if attempt:
                        raise WorkspacedError("%s %s: %s" % (method, self.root, e), "check that the listener runs") from None
                except OSError as e:
                    conn.close()
                    self._conn = None
                    raise WorkspacedError("cannot reach %s: %s" % (self.root, e),
                                          "check the URL, and that 'workspaced serve --listen' runs there") from None
        if resp.status >= 400:
            problem = read_problem(raw, "%s %s: HTTP %d" % (method, path, resp.status))
            retry = resp.getheader("Retry-After") or "0"
            raise from_problem(resp.status, problem, float(retry) if retry.isdigit() else 0.0)
        if resp.status == 204 or not raw:
            return None
        return json.loads(raw)

    # ---- entries -------------------------------------------------------
    def _scope_path(self, scope: str, owner: str) -> str:
        if scope == "thread":
            return "/tasks/%s/env" % quote(owner, safe="")
        if scope == "session":
            task, _, thread = owner.partition("/")
            return "/tasks/%s/threads/%s/session" % (quote(task, safe=""), quote(thread, safe=""))
        if scope == "agent":
            return "/memory/agents/%s" % quote(owner, safe="")
        return "/memory/global"

    def entry_put(self, scope: str, owner: str, key: str, value: Any, description: str | None,
                  if_version: int | None, if_absent: bool) -> Entry:
        value_json(value)
        raw = value if isinstance(value, RawJSON) else None
        body: dict[str, Any] = {} if raw is not None else {"value": value}
        if description is not None:
            body["short_description"] = description
        h = {}
        if if_version is not None:
            h["If-Match"] = '"%d"' % if_version
        if if_absent:
            h["If-None-Match"] = "*"
        out = self._call("PUT", self._scope_path(scope, owner) + "/" + _key(key), body=body, headers=h, raw_value=raw)
        return _entry(out["entry"])

    def entry_get(self, scope: str, owner: str, key: str) -> Entry:
        return _entry(self._call("GET", self._scope_path(scope, owner) + "/" + _key(key)))

    def entry_list(self, scope: str, owner: str) -> list[EntryInfo]:
        out = self._call("GET", self._scope_path(scope, owner))
        return [EntryInfo(key=e["key"], version=int(e["version"]), size=int(e["size"]),
                          short_description=e.get("short_description", ""), stored_by=e.get("stored_by", ""),
                          updated_at=e.get("updated_at", "")) for e in out["entries"]]

    def entry_delete(self, scope: str, owner: str, key: str, if_version: int | None) -> None:
        h = {"If-Match": '"%d"' % if_version} if if_version is not None else {}
        self._call("DELETE", self._scope_path(scope, owner) + "/" + _key(key), headers=h)

    # ---- namespaced memory ---------------------------------------------
    def _item_query(self, ns: tuple[str, ...], key: str) -> list[tuple[str, str]]:
        return [("namespace", label) for label in ns] + [("key", key)]

    def memory_put(self, ns: tuple[str, ...], key: str, value: dict[str, Any], ttl_seconds: int | None,
                   if_version: int | None, if_absent: bool) -> MemoryItem:
        body: dict[str, Any] = {"value": value}
        if ttl_seconds is not None:
            body["ttl_seconds"] = ttl_seconds
        h = {}
        if if_version is not None:
            h["If-Match"] = '"%d"' % if_version
        if if_absent:
            h["If-None-Match"] = "*"
        return _item(self._call("PUT", "/memory/items", self._item_query(ns, key), body, h))

    def memory_get(self, ns: tuple[str, ...], key: str) -> MemoryItem:
        return _item(self._call("GET", "/memory/items", self._item_query(ns, key)))

    def memory_delete(self, ns: tuple[str, ...], key: str, if_version: int | None) -> None:
        h = {"If-Match": '"%d"' % if_version} if if_version is not None else {}
        self._call("DELETE", "/memory/items", self._item_query(ns, key), headers=h)

    def memory_search(self, prefix: tuple[str, ...], filter: dict[str, Any] | None, limit: int,
                      offset: int) -> list[MemoryItem]:
        body: dict[str, Any] = {"namespace_prefix": list(prefix), "limit": limit, "offset": offset}
        if filter:
            body["filter"] = filter
        return [_item(i) for i in self._call("POST", "/memory/search", body=body)["items"]]

    def memory_namespaces(self, prefix: tuple[str, ...], suffix: tuple[str, ...], max_depth: int | None,
                          limit: int, offset: int) -> list[tuple[str, ...]]:
        body: dict[str, Any] = {"prefix": list(prefix), "suffix": list(suffix), "limit": limit, "offset": offset}
        if max_depth is not None:
            body["max_depth"] = max_depth
        return [tuple(n) for n in self._call("POST", "/memory/namespaces", body=body)["namespaces"]]

    # ---- tasks ---------------------------------------------------------
    def create_task(self, task: str, description: str, fields: dict[str, Any]) -> dict[str, Any]:
        body = {"id": task, "description": description}
        body.update({k: v for k, v in fields.items() if v is not None})
        out: dict[str, Any] = self._call("POST", "/tasks", body=body)
        return out

    def task(self, task: str) -> dict[str, Any]:
        out: dict[str, Any] = self._call("GET", "/tasks/" + quote(task, safe=""))["task"]
        return out

    def tasks(self) -> list[str]:
        ids: list[str] = []
        while True:
            page = self._call("GET", "/tasks", [("limit", "1000"), ("offset", str(len(ids)))])
            ids += [t["task"]["id"] for t in page["tasks"]]
            if not page["tasks"] or len(ids) >= int(page["total"]):
                return sorted(ids)

    def state(self, task: str) -> dict[str, Any] | None:
        st: dict[str, Any] | None = self._call("GET", "/tasks/" + quote(task, safe="")).get("state")
        return st

    def create_thread(self, task: str, thread: str, to: str, fields: dict[str, Any]) -> dict[str, Any]:
        body = {"id": thread, "to": to}
        body.update({k: v for k, v in fields.items() if v is not None})
        out: dict[str, Any] = self._call("POST", "/tasks/%s/threads" % quote(task, safe=""), body=body)
        return out

    def thread(self, task: str, thread: str) -> dict[str, Any]:
        out: dict[str, Any] = self._call("GET", "/tasks/%s/threads/%s" % (quote(task, safe=""), quote(thread, safe="")))
        return out

    # ---- products and markers ------------------------------------------
    def _marker_query(self, done: bool, wait: float | None, key: str = "done") -> list[tuple[str, str]]:
        q = [(key, "true")] if done else []
        w = _wait(wait)
        if w is not None and done:
            q.append(("wait", w))
        return q

    def write_plan(self, task: str, plan: dict[str, Any], propose: bool, wait: float | None) -> Delivery:
        return _delivery(self._call("POST", "/tasks/%s/plan" % quote(task, safe=""),
                                    self._marker_query(propose, wait, "propose"), plan))

    def product(self, task: str, path: str) -> dict[str, Any]:
        t = quote(task, safe="")
        q: list[tuple[str, str]] = []
        if path == "plan.json":
            route = "/tasks/%s/plan" % t
        elif path.startswith("plans/plan_v"):
            route, q = "/tasks/%s/plan" % t, [("version", path[len("plans/plan_v"):-len(".json")])]
        else:
            kind, name = path.split("/", 1)
            route = "/tasks/%s/%s/%s" % (t, kind, quote(name[:-len(".json")], safe=""))
        out: dict[str, Any] = self._call("GET", route, q)
        return out

    def claim(self, task: str, subtask: str, wait: float | None) -> Delivery:
        body: dict[str, Any] = {"subtask": subtask}
        w = _wait(wait)
        if w is not None:
            body["wait"] = w
        return _delivery(self._call("POST", "/tasks/%s/claims" % quote(task, safe=""), body=body))

    def write_output(self, task: str, subtask: str, output: dict[str, Any], done: bool,
                     wait: float | None) -> Delivery:
        return _delivery(self._call("PUT", "/tasks/%s/outputs/%s" % (quote(task, safe=""), quote(subtask, safe="")),
                                    self._marker_query(done, wait), output))

    def write_review(self, task: str, review: str, doc: dict[str, Any], done: bool,
                     wait: float | None) -> Delivery:
        return _delivery(self._call("PUT", "/tasks/%s/reviews/%s" % (quote(task, safe=""), quote(review, safe="")),
                                    self._marker_query(done, wait), doc))

    def done(self, task: str, output_file: str | None, subtask: str | None, status: str, error: str | None,
             wait: float | None) -> Delivery:
        body: dict[str, Any] = {"status": status}
        if output_file:
            body["output_file"] = output_file
        if subtask:
            body["subtask"] = subtask
        if error:
            body["error"] = error
        w = _wait(wait)
        if w is not None:
            body["wait"] = w
        return _delivery(self._call("POST", "/tasks/%s/done" % quote(task, safe=""), body=body))

    # ---- events, context -----------------------------------------------
    def events(self, task: str, after: int, limit: int) -> EventPage:
        out = self._call("GET", "/tasks/%s/events" % quote(task, safe=""), [("after", str(after)), ("limit", str(limit))])
        return EventPage([_sse.event_of(e) for e in out["events"]], int(out["next"]))

    def follow(self, task: str, after: int, timeout: float | None) -> Iterator[Event] | None:
        """The API's stream of the task's events (a connection of its own)."""
        url = self._base + _API + "/tasks/%s/events" % quote(task, safe="")
        return _sse.follow(self._new_conn, url, self._auth(), after, timeout)

    def context(self, thread: str, budget: int | None) -> dict[str, Any]:
        q = [("budget", str(int(budget)))] if budget is not None else []
        out: dict[str, Any] = self._call("GET", "/threads/%s/context" % quote(thread, safe=""), q)
        return out

    def preamble(self, thread: str, detail: str | None) -> dict[str, Any]:
        q = [("detail", detail)] if detail else []
        out: dict[str, Any] = self._call("GET", "/threads/%s/preamble" % quote(thread, safe=""), q)
        return out



