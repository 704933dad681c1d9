"""The namespaced memory on a workspace directory: a directory per
namespace under memory/namespaces/ (the hash of its labels), named by its
.namespace.json, an item a file, written under its lock; the memory
events in memory/namespaces/events.log."""

from __future__ import annotations

import hashlib
import json
import os
from datetime import datetime, timedelta, timezone
from typing import Any

from ._common import canonical, check_key, check_namespace, encode_key, match_filter, match_namespace, now, quote, value_json
from ._tree import _fsync_dir, _lock_of, _locked, _read_json, atomic_write
from .errors import Invalid, NotFound, VersionConflict
from .types import MemoryItem


def _sortable(ns: tuple[str, ...]) -> str:
    return "".join(label + "\x01" for label in ns)


def _item(d: dict[str, Any]) -> MemoryItem:
    return MemoryItem(namespace=tuple(d["namespace"]), key=str(d["key"]), value=d.get("value") or {},
                      version=int(d.get("version", 0)), created_at=str(d.get("created_at", "")),
                      updated_at=str(d.get("updated_at", "")), expires_at=d.get("expires_at"))


def _live(it: MemoryItem, at: str) -> bool:
    return it.expires_at is None or _parse_time(it.expires_at) > _parse_time(at)


def _parse_time(s: str) -> datetime:
    return datetime.fromisoformat(s.replace("Z", "+00:00"))


class FilesMemory:
    """The memory operations of FilesBackend."""

    root: str
    agent: str
    lock_timeout: float

    # ---- namespaced memory ---------------------------------------------
    def _ns_dir(self, ns: tuple[str, ...]) -> str:
        h = hashlib.sha256(_sortable(ns).encode("utf-8")).hexdigest()[:32]
        return os.path.join(self.root, "memory", "namespaces", h)

    def _memory_event(self, verb: str, ns: tuple[str, ...], key: str, version: int, at: str) -> None:
        attrs: dict[str, Any] = {"agent": self.agent, "key": key, "namespace": json.dumps(list(ns), ensure_ascii=False,
                                                                                        separators=(",", ":"))}
        if version:
            attrs["version"] = version
        words = [at, "memory_" + verb, quote("")] + ["%s=%s" % (k, quote(str(v))) for k, v in sorted(attrs.items())]
        p = os.path.join(self.root, "memory", "namespaces", "events.log")
        fd = os.open(p, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (" ".join(words) + "\n").encode("utf-8"))
        finally:
            os.close(fd)

    def memory_put(self, ns: tuple[str, ...], key: str, value: dict[str, Any], ttl_seconds: int | None,
                   if_version: int | None, if_absent: bool) -> MemoryItem:
        ns = check_namespace(ns)
        check_key(key)
        if not isinstance(value, dict):
            raise Invalid("a memory item's value is a JSON object", "give a dict", "value")
        value_json(value)
        if ttl_seconds is not None and ttl_seconds < 1:
            raise Invalid("ttl_seconds %r: a TTL is at least 1 second" % ttl_seconds, "leave it out for no expiry", "ttl_seconds")
        d = self._ns_dir(ns)
        os.makedirs(d, exist_ok=True)
        if not os.path.exists(os.path.join(d, ".namespace.json")):
            atomic_write(os.path.join(d, ".namespace.json"), canonical({"namespace": list(ns)}))
        path = os.path.join(d, encode_key(key) + ".json")
        with _locked(_lock_of(path), self.agent, self.lock_timeout):
            t = now()
            try:
                old: MemoryItem | None = _item(_read_json(path))
            except (NotFound, Invalid, KeyError):
                old = None
            if old is not None and not _live(old, t):
                old = None
            cur = old.version if old else 0
            if if_absent and old is not None:
                raise VersionConflict("item %r exists already (version %d)" % (key, cur), cur)
            if if_version is not None and cur != if_version:
                raise VersionConflict("item %r is no longer at version %d: version is %d" % (key, if_version, cur), cur)
            exp = None
            if ttl_seconds is not None:
                e = datetime.now(timezone.utc) + timedelta(seconds=ttl_seconds)
                exp = e.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (e.microsecond // 1000)
            doc = {"namespace": list(ns), "key": key, "version": cur + 1, "created_at": old.created_at if old else t,
                   "updated_at": t, "expires_at": exp, "value": value}
            atomic_write(path, canonical(doc))
        self._memory_event("stored", ns, key, cur + 1, t)
        return _item(doc)

    def memory_get(self, ns: tuple[str, ...], key: str) -> MemoryItem:
        ns = check_namespace(ns)
        check_key(key)
        try:
            it = _item(_read_json(os.path.join(self._ns_dir(ns), encode_key(key) + ".json")))
        except NotFound:
            it = None
        if it is None or not _live(it, now()):
            raise NotFound("get item %r of %s: no such item" % (key, list(ns)), "search the namespace to see its items")
        return it

    def memory_delete(self, ns: tuple[str, ...], key: str, if_version: int | None) -> None:
        ns = check_namespace(ns)
        check_key(key)
        path = os.path.join(self._ns_dir(ns), encode_key(key) + ".json")
        if not os.path.isdir(os.path.dirname(path)):
            raise NotFound("delete item %r of %s: no such item" % (key, list(ns)), "search the namespace to see its items")
        with _locked(_lock_of(path), self.agent, self.lock_timeout):
            t = now()
            try:
                it: MemoryItem | None = _item(_read_json(path))
            except NotFound:
                it = None
            if it is not None and not _live(it, t):
                it = None
            cur = it.version if it else 0
            if if_version is not None and cur != if_version:
                raise VersionConflict("item %r is no longer at version %d: version is %d" % (key, if_version, cur), cur)
            if it is None:
                raise NotFound("delete item %r of %s: no such item" % (key, list(ns)), "search the namespace to see its items")
            os.unlink(path)
            _fsync_dir(os.path.dirname(path))
        self._memory_event("deleted", ns, key, 0, t)

    def _namespaces(self) -> list[tuple[tuple[str, ...], str]]:
        base = os.path.join(self.root, "memory", "namespaces")
        out = []
        try:
            names = os.listdir(base)
        except FileNotFoundError:
            return []
        for h in names:
            try:
                doc = _read_json(os.path.join(base, h, ".namespace.json"))
                out.append((tuple(doc["namespace"]), os.path.join(base, h)))
            except (NotFound, Invalid, KeyError, TypeError, NotADirectoryError):
                continue
        out.sort(key=lambda p: p[0])
        return out

    def _items(self, d: str) -> list[MemoryItem]:
        t = now()
        out = []
        for name in sorted(os.listdir(d)):
            if name.startswith(".") or not name.endswith(".json"):
                continue
            try:
                it = _item(_read_json(os.path.join(d, name)))
            except (NotFound, Invalid, KeyError):
                continue
            if _live(it, t):
                out.append(it)
        out.sort(key=lambda i: i.key.encode("utf-8"))
        return out

    def memory_search(self, prefix: tuple[str, ...], filter: dict[str, Any] | None, limit: int,
                      offset: int) -> list[MemoryItem]:
        out: list[MemoryItem] = []
        for ns, d in self._namespaces():
            if ns[:len(prefix)] != tuple(prefix):
                continue
            out.extend(it for it in self._items(d) if match_filter(it.value, filter))
        return out[offset:offset + limit]

    def memory_namespaces(self, prefix: tuple[str, ...], suffix: tuple[str, ...], max_depth: int | None,
                          limit: int, offset: int) -> list[tuple[str, ...]]:
        seen: list[tuple[str, ...]] = []
        for ns, d in self._namespaces():
            if not match_namespace(ns, prefix, suffix) or not self._items(d):
                continue
            n = ns[:max_depth] if max_depth else ns
            if n not in seen:
                seen.append(n)
        return seen[offset:offset + limit]
