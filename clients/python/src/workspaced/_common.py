"""What every local way in shares: ids, keys, times, documents, the
verdict read from a journal record and a state, and events lines."""

from __future__ import annotations

import json
import re
import secrets
import time
from datetime import datetime, timezone
from typing import Any

from .errors import Conflict, Invalid
from .types import Event, Verdict

ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")
VALUE_MAX = 1 << 20
MAX_FILE_NAME = 250
MAX_DEPTH = 64
FINISHED = ("completed", "failed", "cancelled")
SCOPES = ("thread", "session", "agent", "global")
_KEEP = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")


def now() -> str:
    """RFC 3339 in UTC with milliseconds, as every workspace document has it."""
    t = datetime.now(timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (t.microsecond // 1000)


def check_id(what: str, s: object) -> str:
    if not isinstance(s, str) or not ID_RE.match(s):
        raise Invalid("%s %r is not a valid id" % (what, s),
                      "an id is 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit")
    return s


def check_key(key: object) -> str:
    if not isinstance(key, str):
        raise Invalid("key %r is not a string" % (key,), "a key is 1-200 bytes of UTF-8 without control characters")
    n = len(key.encode("utf-8", "surrogatepass"))
    if not 1 <= n <= 200 or any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in key):
        raise Invalid("key %r: a key is 1-200 bytes of UTF-8 without control characters" % key,
                      "choose a shorter key without control characters")
    try:
        raw = key.encode("utf-8")
    except UnicodeEncodeError:
        raise Invalid("key %r is not valid UTF-8" % key, "keys must be valid UTF-8") from None
    n = sum(1 if b in _KEEP and not (i == 0 and b == 0x2E) else 3 for i, b in enumerate(raw))
    if n > MAX_FILE_NAME:
        raise Invalid("key %r encodes to a %d-byte file name (limit %d)" % (key, n, MAX_FILE_NAME),
                      "use fewer non-ASCII or punctuation characters: each is stored as %XX")
    return key


def encode_key(key: str) -> str:
    """A key's file name without .json: bytes outside [A-Za-z0-9._-] and a
    leading '.' become %XX (upper-case hex)."""
    raw = check_key(key).encode("utf-8")
    return "".join(chr(b) if b in _KEEP and not (i == 0 and b == 0x2E) else "%%%02X" % b for i, b in enumerate(raw))


def decode_key(name: str) -> str:
    out = bytearray()
    i = 0
    while i < len(name):
        if name[i] == "%":
            out.append(int(name[i + 1:i + 3], 16))
            i += 3
        else:
            out.append(ord(name[i]))
            i += 1
    return out.decode("utf-8")


def _depth(v: Any, limit: int) -> int:
    """The nesting of v, counting no further than limit + 1."""
    stack = [(v, 1)]
    top = 0
    while stack:
        x, d = stack.pop()
        if isinstance(x, dict):
            top = max(top, d)
            if d > limit:
                return d
            stack.extend((y, d + 1) for y in x.values())
        elif isinstance(x, list):
            top = max(top, d)
            if d > limit:
                return d
            stack.extend((y, d + 1) for y in x)
    return top


_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[ \t\n\r]+')


def _no_constant(name: str) -> Any:
    raise ValueError("%s is not JSON" % name)


class RawJSON:
    """A value given as JSON text, sent as it is written: not decoded and
    encoded again, so numbers keep their digits and objects their order.
    The text is checked as a value is (one JSON document, at most 1 MiB
    compact, nested at most 64 levels) when it is made; ``text`` is it
    without the whitespace between tokens, ``value`` it decoded."""

    __slots__ = ("text", "value")

    def __init__(self, text: str | bytes) -> None:
        if isinstance(text, (bytes, bytearray)):
            try:
                text = bytes(text).decode("utf-8")
            except UnicodeDecodeError as e:
                raise Invalid("raw JSON is not UTF-8: %s" % e, "give UTF-8 text", "value") from None
        if not isinstance(text, str):
            raise Invalid("raw JSON is text, not %s" % type(text).__name__, "give a str or bytes of JSON", "value")
        try:
            self.value: Any = json.loads(text, parse_constant=_no_constant)
        except ValueError as e:
            raise Invalid("value is not JSON: %s" % e, "give one JSON document", "value") from None
        except RecursionError:
            raise Invalid("value is nested deeper than %d levels" % MAX_DEPTH, "flatten the value", "value") from None
        self.text: str = _TOKEN.sub(lambda m: m.group(0) if m.group(0)[0] == '"' else "", text)
        try:
            n = len(self.text.encode("utf-8"))
        except UnicodeEncodeError as e:
            raise Invalid("raw JSON is not UTF-8: %s" % e, "give valid UTF-8 text", "value") from None
        if n > VALUE_MAX:
            raise Invalid("value is %d bytes, over the %d-byte limit" % (n, VALUE_MAX),
                          "store a smaller value, or a reference to a file", "value")
        if _depth(self.value, MAX_DEPTH) > MAX_DEPTH:
            raise Invalid("value is nested deeper than %d levels" % MAX_DEPTH, "flatten the value", "value")

    def __repr__(self) -> str:
        return "RawJSON(%r)" % (self.text if len(self.text) < 60 else self.text[:57] + "...")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RawJSON) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)


def value_json(value: Any, what: str = "value") -> str:
    """The value as compact JSON, held to the limits of every store."""
    if isinstance(value, RawJSON):
        return value.text  # checked when it was made
    try:
        body = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as e:
        raise Invalid("%s is not JSON: %s" % (what, e), "give a dict, list, str, number, bool or None") from None
    except RecursionError:
        raise Invalid("%s is nested deeper than %d levels" % (what, MAX_DEPTH), "flatten the value") from None
    if len(body.encode("utf-8")) > VALUE_MAX:
        raise Invalid("%s is %d bytes, over the %d-byte limit" % (what, len(body.encode("utf-8")), VALUE_MAX),
                      "store a smaller value, or a reference to a file")
    if _depth(value, MAX_DEPTH) > MAX_DEPTH:
        raise Invalid("%s is nested deeper than %d levels" % (what, MAX_DEPTH), "flatten the value")
    return body


def value_text(value: Any) -> str:
    """The value as an entry file holds it (2-space indent), held to the
    limits of every store (on its compact JSON, as they measure it); raw
    JSON text is held as it was given, compact."""
    if isinstance(value, RawJSON):
        return value.text
    try:
        text = json.dumps(value, ensure_ascii=False, indent=2, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise Invalid("value is not JSON: %s" % e, "give a dict, list, str, number, bool or None") from None
    except RecursionError:
        raise Invalid("value is nested deeper than %d levels" % MAX_DEPTH, "flatten the value") from None
    if len(text) > VALUE_MAX // 4 or len(text.encode("utf-8")) > VALUE_MAX:
        value_json(value)  # the exact size; raises over the limit
    elif _depth(value, MAX_DEPTH) > MAX_DEPTH:
        raise Invalid("value is nested deeper than %d levels" % MAX_DEPTH, "flatten the value")
    return text


def check_description(d: object) -> str:
    if not isinstance(d, str) or "\x00" in d:
        raise Invalid("short_description must be text without NUL", "remove the NUL characters", "short_description")
    try:
        d.encode("utf-8")
    except UnicodeEncodeError:
        raise Invalid("short_description is not valid UTF-8", "give UTF-8 text", "short_description") from None
    return d


def canonical(obj: Any) -> bytes:
    """A document as the files hold it: 2-space indent, UTF-8, a trailing newline."""
    return (json.dumps(obj, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def suffix() -> str:
    """A marker name's unique tail."""
    return "%d-%s" % (time.time_ns(), secrets.token_hex(3))


def owner_of(scope: str, task: str, thread: str, agent: str) -> str:
    if scope == "thread":
        return check_id("task id", task)
    if scope == "session":
        return check_id("task id", task) + "/" + check_id("thread id", thread)
    if scope == "agent":
        return check_id("agent", agent)
    if scope == "global":
        return ""
    raise Invalid("scope %r is not one of %s" % (scope, ", ".join(SCOPES)), "use thread, session, agent or global")


def check_namespace(ns: Any) -> tuple[str, ...]:
    if isinstance(ns, str) or not isinstance(ns, (list, tuple)) or not 1 <= len(ns) <= 16:
        raise Invalid("namespace %r: a namespace is 1-16 labels" % (ns,), "give a list of labels, such as ['users', '42']")
    for label in ns:
        if not isinstance(label, str) or not label or "\x00" in label or "\x01" in label or len(label.encode()) > 200:
            raise Invalid("namespace %r: label %r is not 1-200 bytes of text" % (ns, label),
                          "a label is non-empty text without control characters")
    return tuple(ns)


# ---- verdicts -----------------------------------------------------------

def _refusal(st: dict[str, Any], rec: dict[str, Any]) -> str | None:
    """Why the record was refused, or None when it was applied."""
    if rec.get("rejected"):
        return str(rec["rejected"])
    m = rec.get("marker") or {}
    failure = "subtask %s failed: %s" % (m.get("subtask_id", ""), m.get("error") or "failed without an error message")
    for e in st.get("errors") or []:
        if e.get("seq") != rec["seq"]:
            continue
        if rec.get("kind") == "done" and m.get("status") == "failed" and e.get("message") == failure:
            continue
        return str(e.get("message", ""))
    return None


def judge(st: dict[str, Any], rec: dict[str, Any], marker: str) -> Verdict:
    """The verdict on the marker whose journal record is rec, from a state
    that applied it (docs/PROTOCOL.md, section 5)."""
    m = rec.get("marker") or {}
    sid = str(m.get("subtask_id", ""))
    ss = (st.get("subtasks") or {}).get(sid) if sid else None
    reason = _refusal(st, rec)
    if reason is None:
        verdict = "won" if rec.get("kind") == "claim" else "applied"
    elif sid and st.get("plan_status") == "approved" and ss is None:
        verdict = "not_found"
    else:
        verdict = "lost" if rec.get("kind") == "claim" else "refused"
    return Verdict(marker=marker, task_id=str(st.get("task_id", "")), kind=str(rec.get("kind", "")), verdict=verdict,
                   seq=int(rec["seq"]), reason=reason or "", subtask_id=sid,
                   subtask_status=str(ss.get("status", "")) if ss else "",
                   worker=str(ss.get("worker", "")) if ss else "", task_status=str(st.get("status", "")))


def verdict_of(d: dict[str, Any]) -> Verdict:
    """A verdict as JSON (the API's, the CLI's --json)."""
    return Verdict(marker=str(d.get("marker", "")), task_id=str(d.get("task_id", "")), kind=str(d.get("kind", "")),
                   verdict=str(d.get("verdict", "")), seq=int(d.get("seq") or 0), reason=str(d.get("reason") or ""),
                   subtask_id=str(d.get("subtask_id") or ""), subtask_status=str(d.get("subtask_status") or ""),
                   worker=str(d.get("worker") or ""), task_status=str(d.get("task_status") or ""),
                   journaled=int(d.get("journaled") or 0))


# ---- documents ----------------------------------------------------------

def output_doc(subtask: str, agent: str, output: dict[str, Any]) -> dict[str, Any]:
    """An output as it is written: subtask_id and worker_id set, completed_at
    and status filled when left out."""
    if not isinstance(output, dict):
        raise Invalid("an output is a JSON object", "give a dict, such as {'summary': '...'}")
    doc = dict(output)
    for fld, want in (("subtask_id", subtask), ("worker_id", agent)):
        if fld in doc and doc[fld] not in ("", want):
            raise Invalid("the output says %s %s, but it is written for %r" % (fld, json.dumps(doc[fld]), want),
                          "leave %s out: it is filled in" % fld, fld)
    doc["subtask_id"], doc["worker_id"] = subtask, agent
    doc.setdefault("completed_at", now())
    doc.setdefault("status", "completed")
    return doc


def review_doc(review: str, agent: str, doc: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(doc, dict):
        raise Invalid("a review is a JSON object", "give a dict with type and verdict")
    out = dict(doc)
    for fld, want in (("id", review), ("reviewer", agent)):
        if fld in out and out[fld] not in ("", want):
            raise Invalid("the review says %s %s, but it is written as %r" % (fld, json.dumps(out[fld]), want),
                          "leave %s out: it is filled in" % fld, fld)
    out["id"], out["reviewer"] = review, agent
    out.setdefault("reviewed_at", now())
    for fld, allowed in (("type", ("plan_review", "checkpoint_review", "output_review")),
                         ("verdict", ("approved", "revision_needed", "rejected"))):
        if out.get(fld) not in allowed:
            raise Invalid("the review's %s is %s, not one of %s" % (fld, json.dumps(out.get(fld)), ", ".join(allowed)),
                          "fix /%s; 'workspaced schema review' shows every field and what it allows" % fld, fld)
    return out


AMEND_HINT = ("amend the running plan instead: add subtasks (which may depend on existing ones), change or withdraw "
              "pending ones; the daemon judges the amendment as a new version")


def plan_closed(task: str, st: dict[str, Any] | None) -> None:
    """Refuse (Conflict) a new version of the plan of task, whose state is st
    (None before the daemon wrote one), as workspaced does: once a plan is
    approved it is never replaced, and a finished task takes no plan. The
    caller holds the task as the daemon's commit of the state does."""
    st = st or {}
    if st.get("status") in FINISHED:
        raise Conflict("task %s is %s and takes no plan; nothing was written" % (task, st["status"]),
                       "a finished task stays finished; start a new task for more work")
    if st.get("plan_status") == "approved":
        raise Conflict("plan %s v%d of task %s is approved, and an approved plan is never replaced; nothing was written"
                       % (st.get("plan_id", ""), int(st.get("plan_version", 0)), task), AMEND_HINT)


def plan_doc(task: str, agent: str, plan: dict[str, Any], version: int) -> dict[str, Any]:
    if not isinstance(plan, dict) or not isinstance(plan.get("subtasks"), list):
        raise Invalid("a plan is a JSON object with a list of subtasks", "give {'subtasks': [{'id': 's1', 'description': '...'}]}",
                      "subtasks")
    for i, st in enumerate(plan["subtasks"]):
        if not isinstance(st, dict):
            raise Invalid("the plan's subtask %d is not an object" % i, "fix /subtasks/%d: a subtask is "
                          "{\"id\": ..., \"description\": ...}; 'workspaced schema plan' shows every field" % i, "subtasks")
        for fld in ("id", "description"):
            if fld not in st:
                raise Invalid("the plan's subtask %d has no %s" % (i, fld), "add the missing field to /subtasks/%d; "
                              "'workspaced schema plan' shows every field and what it allows" % i, "subtasks")
        check_id("subtask id", st["id"])
        if any(isinstance(o, dict) and o.get("id") == st["id"] for o in plan["subtasks"][:i]):
            raise Invalid("the plan has subtask %s twice" % st["id"], "give each subtask an id of its own", "subtasks")
        if not isinstance(st["description"], str):
            raise Invalid("the plan's subtask %d: description is not text" % i, "fix /subtasks/%d/description" % i, "subtasks")
    out = dict(plan)
    out.setdefault("id", "plan_" + task)
    out["task_id"], out["version"] = task, version
    out.setdefault("created_by", agent)
    out.setdefault("created_at", now())
    return out


def task_doc(task: str, description: str, fields: dict[str, Any], agent: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """task.json and the task's root thread, as every store creates them."""
    check_id("task id", task)
    if not isinstance(description, str) or not description.strip():
        raise Invalid("create task: the description is empty", "say what the task is", "description")
    f = dict(fields)
    to = check_id("to", f.pop("to", None) or "coordinator")
    unknown = sorted(set(f) - {"context", "constraints", "priority", "submitted_by"})
    if unknown:
        raise Invalid("create task: unknown field %s" % unknown[0], "give context, constraints, priority or to", unknown[0])
    t = now()
    doc: dict[str, Any] = {"id": task, "created_at": t, "description": description}
    doc.update({k: v for k, v in f.items() if v is not None})
    doc["submitted_by"] = check_id("submitted_by", doc.get("submitted_by") or agent)
    root = {"id": task, "task_id": task, "from": doc["submitted_by"], "to": to, "message": description,
            "created_at": t, "status": "active"}
    return doc, root


def thread_doc(task: str, thread: str, frm: str, to: str, fields: dict[str, Any]) -> dict[str, Any]:
    """A new thread's document, as every store starts it."""
    f = dict(fields)
    doc: dict[str, Any] = {"id": check_id("thread id", thread),
                           "parent_id": check_id("parent thread id", f.pop("parent_id", None) or task),
                           "task_id": task, "from": check_id("from", frm), "to": check_id("to", to)}
    msg = f.pop("message", None)
    if msg:
        doc["message"] = msg
    doc["created_at"] = now()
    doc["status"] = f.pop("status", None) or "active"
    for k in ("concern", "approach", "buffers", "skill_tags", "primary_mode"):
        v = f.pop(k, None)
        if v:
            doc[k] = v
    if f:
        raise Invalid("new thread: unknown field %s" % sorted(f)[0], "give message, concern, approach, buffers, "
                      "skill_tags, primary_mode, status or parent_id", sorted(f)[0])
    return doc


_PRODUCT = re.compile(r"(plan\.json|(outputs|reviews)/[A-Za-z0-9][A-Za-z0-9._-]{0,127}\.json)\Z")


def check_output_file(path: str) -> str:
    if not isinstance(path, str) or not _PRODUCT.match(path):
        raise Invalid("output_file %r is not a document of the task" % (path,),
                      "name plan.json, outputs/<subtask>.json or reviews/<review>.json", "output_file")
    return path


# ---- events -------------------------------------------------------------

_WORD = re.compile(r'("(?:[^"\\]|\\.)*"|[^\s"=]+)(?:=("(?:[^"\\]|\\.)*"|[^\s"]+))?')


def _unquote(w: str) -> str:
    if w.startswith('"'):
        try:
            v = json.loads(w)
        except ValueError:
            return w
        return v if isinstance(v, str) else w
    return w


def parse_event(line: str, start: int, end: int) -> Event | None:
    """One events line, or None for a line that does not parse."""
    words: list[str] = []
    attrs: dict[str, str] = {}
    for m in _WORD.finditer(line):
        if m.group(2) is None:
            words.append(_unquote(m.group(1)))
        else:
            attrs[_unquote(m.group(1))] = _unquote(m.group(2))
    if len(words) < 3:
        return None
    return Event(time=words[0], event=words[1], task_id=words[2], args=tuple(words[3:]), attrs=attrs, start=start, end=end)


def quote(s: str) -> str:
    """An events.log word: bare when printable ASCII without space, quote,
    '=' or backslash, else JSON-quoted (which Go's strconv.Unquote reads)."""
    if s and all(0x20 < ord(c) < 0x7F and c not in '"=\\' for c in s):
        return s
    return json.dumps(s, ensure_ascii=False)


def event_line(task: str, name: str, args: list[str], attrs: dict[str, Any], at: str = "") -> str:
    words = [at or now(), name, task] + [quote(a) for a in args]
    words += ["%s=%s" % (k, quote(str(v))) for k, v in sorted(attrs.items())]
    return " ".join(words) + "\n"


_FILTER_OPS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")


def check_filter(flt: Any) -> dict[str, Any] | None:
    """A memory search's filter, checked: {field: value} or {field: {"$op":
    value}}; an object with any member starting with $ is one of operators."""
    if flt is None:
        return None
    if not isinstance(flt, dict):
        raise Invalid("filter is not a JSON object", 'give an object of conditions on the value\'s fields, '
                      'e.g. {"score": {"$gte": 3}, "kind": "note"}', "filter")
    value_json(flt, "filter")
    for fld, want in flt.items():
        if isinstance(want, dict) and any(str(k).startswith("$") for k in want):
            for op in want:
                if op not in _FILTER_OPS:
                    raise Invalid("filter: field %r: unknown operator %r" % (fld, op),
                                  "use $eq, $ne, $gt, $gte, $lt or $lte", "filter")
    return flt


def match_namespace(ns: tuple[str, ...], prefix: tuple[str, ...], suffix: tuple[str, ...]) -> bool:
    """Whether ns starts with prefix and ends with suffix, label by label,
    "*" matching any one label."""
    if len(prefix) > len(ns) or len(suffix) > len(ns):
        return False

    def match(pattern: tuple[str, ...], labels: tuple[str, ...]) -> bool:
        return all(p == "*" or p == label for p, label in zip(pattern, labels))

    return match(prefix, ns[:len(prefix)]) and match(suffix, ns[len(ns) - len(suffix):])


def match_filter(value: dict[str, Any], flt: dict[str, Any] | None) -> bool:
    """A memory search's filter: {field: value} or {field: {"$op": value}}."""
    for fld, want in (flt or {}).items():
        have = value.get(fld)
        ops = want if isinstance(want, dict) and any(str(k).startswith("$") for k in want) else {"$eq": want}
        for op, w in ops.items():
            if op == "$eq":
                ok = fld in value and have == w
            elif op == "$ne":
                ok = have != w
            elif op in ("$gt", "$gte", "$lt", "$lte"):
                try:
                    ok = {"$gt": have > w, "$gte": have >= w, "$lt": have < w, "$lte": have <= w}[op]
                except TypeError:
                    ok = False
            else:
                raise Invalid("filter of %s: unknown operator %s" % (fld, op), "use $eq, $ne, $gt, $gte, $lt or $lte")
            if not ok:
                return False
    return True
