"""How fast the package is beside its floors, measured in the same run.

    python3 bench/bench.py --bin PATH/TO/workspaced [--n 200]

- env put on a directory, beside Python's own durable write of the same
  bytes (temporary file, fsync, rename, directory fsync);
- env put on SQLite, beside a sqlite3 upsert of the same row in its own
  transaction, on the same file with the same pragmas;
- a claim's verdict (drop the marker, read the daemon's verdict), beside
  the Go client's (`workspaced claim --wait`) on the same store and
  daemon; the package is timed in-process and as a process of its own.

Each pair alternates, one of each per round, and the medians are compared.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

import workspaced  # noqa: E402
from workspaced._tree import atomic_write  # noqa: E402

VALUE = {"task_id": "training-001", "input_grid": [[0, 1, 2], [3, 4, 5], [6, 7, 8]], "note": "x" * 200}


def rounds(n: int, *fs: Callable[[int], float | None]) -> list[float]:
    """Medians in ms of each of fs, one of each per round (the order
    turning each round), n rounds after a warm-up. A function that times
    itself returns its milliseconds."""
    for i in range(3):
        for f in fs:
            f(-1 - i)
    times: list[list[float]] = [[] for _ in fs]
    for i in range(n):
        for j in range(len(fs)):
            k = (i + j) % len(fs)
            t = time.perf_counter()
            own = fs[k](i)
            times[k].append(own if own is not None else (time.perf_counter() - t) * 1000)
    return [statistics.median(ts) for ts in times]


def pair(n: int, a: Callable[[int], float | None], b: Callable[[int], float | None]) -> tuple[float, float]:
    """Medians in ms of a and b, alternated n times after a warm-up."""
    ma, mb = rounds(n, a, b)
    return ma, mb


def report(name: str, ours: float, floor: float, floor_name: str, bound: float) -> dict[str, Any]:
    ratio = ours / floor
    verdict = "within" if ratio <= bound else "OVER"
    print("%-34s %8.3f ms   %-40s %8.3f ms   %.2fx (%s %.1fx)" % (name, ours, floor_name, floor, ratio, verdict, bound))
    return {"name": name, "ours_ms": round(ours, 3), "floor": floor_name, "floor_ms": round(floor, 3),
            "ratio": round(ratio, 3), "bound": bound}


def run(bin: str, *args: str, env: dict[str, str] | None = None) -> str:
    p = subprocess.run([bin, *args], capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise SystemExit("%s %s: %s" % (bin, " ".join(args), p.stderr))
    return p.stdout


def serve(bin: str, root: str) -> subprocess.Popen[bytes]:
    d = subprocess.Popen([bin, "--root", root, "serve"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    lock = root[len("sqlite:"):] + ".lock" if root.startswith("sqlite:") else os.path.join(root, ".workspaced.lock")
    ws = workspaced.connect(root, agent="probe")
    deadline = time.monotonic() + 30
    while not getattr(ws._b, "_serving")():
        if time.monotonic() > deadline:
            raise SystemExit("no daemon on %s (lock %s)" % (root, lock))
        time.sleep(0.01)
    return d


def approved(root: str, n: int) -> str:
    ws = workspaced.connect(root, agent="planner")
    t = "bench_" + secrets.token_hex(4)
    ws.create_task(t, "claims to time")
    ws.write_plan(t, {"subtasks": [{"id": "s%d" % i, "description": "s"} for i in range(n)]},
                  propose=True, wait=30).check()
    workspaced.connect(root, agent="reviewer").write_review(
        t, "pr", {"type": "plan_review", "verdict": "approved"}, done=True, wait=30).check()
    return t


def bench_claims(bin: str, goclaim: str, root: str, n: int, label: str) -> list[dict[str, Any]]:
    d = serve(bin, root)
    try:
        t = approved(root, 4 * n + 40)
        ws = workspaced.connect(root, agent="py_worker")
        sub = iter(range(10**6))
        env = dict(os.environ, WORKSPACE_ROOT=root)
        go_client = subprocess.Popen([goclaim, root, t, "go_worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert go_client.stdin is not None and go_client.stdout is not None
        go_in, go_out = go_client.stdin, go_client.stdout

        def py(_: int) -> None:
            assert ws.claim(t, "s%d" % next(sub), wait=30).won

        def go(_: int) -> float:
            go_in.write("s%d\n" % next(sub))
            go_in.flush()
            verdict, ms = go_out.readline().split()[:2]
            assert verdict == "won", verdict
            return float(ms)

        def go_cli(_: int) -> None:
            run(bin, "claim", "--task", t, "--agent", "go_cli", "--subtask", "s%d" % next(sub), "--wait", "30s", env=env)

        src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
        prog = ("import sys, workspaced; ws = workspaced.connect(sys.argv[1], agent='py_proc');"
                "assert ws.claim(sys.argv[2], sys.argv[3], wait=30).won")

        def pyproc(_: int) -> None:
            subprocess.run([sys.executable, "-c", prog, root, t, "s%d" % next(sub)], check=True,
                           env=dict(os.environ, PYTHONPATH=src))

        out = []
        try:
            a, b = pair(n, py, go)
            out.append(report("claim verdict, %s" % label, a, b, "Go client (service.Claim, in-process)", 1.2))
            a, b = pair(max(n // 2, 5), pyproc, go_cli)
            out.append(report("claim, %s, python3 -c" % label, a, b, "workspaced claim --wait", 1.2))
        finally:
            go_in.close()
            go_client.wait()
        return out
    finally:
        d.terminate()
        d.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.environ.get("WORKSPACED_BIN", "workspaced"))
    ap.add_argument("--goclaim", default="", help="the Go client (go build ./clients/python/bench/goclaim); built when not given")
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--dir", default=None, help="where the workspaces go (default: a temporary directory)")
    ap.add_argument("--json", action="store_true", help="print the results as JSON too")
    args = ap.parse_args()
    base = args.dir or tempfile.mkdtemp(prefix="wsbench-")
    results = []

    # env put on a directory
    root = os.path.join(base, "tree")
    run(args.bin, "--root", root, "init")
    ws = workspaced.connect(root, agent="bench")
    t = "env_task"
    ws.create_task(t, "env puts")
    data = (json.dumps({"key": "k", "short_description": "", "stored_by": "bench", "created_at": "x",
                        "updated_at": "x", "version": 1, "value": VALUE}, indent=2) + "\n").encode()
    floor_dir = os.path.join(base, "floor")
    os.makedirs(floor_dir)

    def put(i: int) -> None:
        ws.env_of(t).put("k", VALUE)

    def floor(i: int) -> None:
        atomic_write(os.path.join(floor_dir, "k.json"), data)

    # The Go store's put of the same entry, beside the same floor in the
    # same rounds: what the protocol costs (lock, holder record, read,
    # event) in the language the daemon is written in.
    goclaim = args.goclaim
    if not goclaim:
        goclaim = os.path.join(base, "goclaim")
        here = os.path.dirname(os.path.abspath(__file__))
        subprocess.run(["go", "build", "-o", goclaim, "./goclaim"], cwd=here, check=True)
    go_client = subprocess.Popen([goclaim, root, t, "go_bench"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert go_client.stdin is not None and go_client.stdout is not None
    go_in, go_out = go_client.stdin, go_client.stdout
    line = "put g %s\n" % json.dumps(VALUE)

    def go_put(i: int) -> float:
        go_in.write(line)
        go_in.flush()
        version, ms = go_out.readline().split()[:2]
        assert version.isdigit(), version
        return float(ms)

    a, b, g = rounds(args.n, put, floor, go_put)
    go_in.close()
    go_client.wait()
    results.append(report("env put, directory", a, b, "tmp+fsync+rename+dir fsync", 1.3))
    results.append(report("env put, directory, Go store", g, b, "tmp+fsync+rename+dir fsync", 1.3))

    # env put on SQLite
    db = os.path.join(base, "agents.db")
    run(args.bin, "--root", "sqlite:" + db, "init")
    ws = workspaced.connect("sqlite:" + db, agent="bench")
    ws.create_task(t, "env puts")
    conn = sqlite3.connect(db, isolation_level=None)
    for p in ("busy_timeout = 10000", "journal_mode = WAL", "synchronous = FULL", "foreign_keys = ON"):
        conn.execute("PRAGMA " + p)
    body = json.dumps(VALUE, separators=(",", ":"))

    def upsert(i: int) -> None:
        now = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
        conn.execute("INSERT INTO entries (scope, owner, key, short_description, stored_by, created_at, updated_at, "
                     "version, size, value) VALUES ('thread', ?, 'floor', '', 'bench', ?, ?, 1, ?, ?) "
                     "ON CONFLICT (scope, owner, key) DO UPDATE SET updated_at = excluded.updated_at, "
                     "version = entries.version + 1, size = excluded.size, value = excluded.value",
                     (t, now, now, len(body), body))

    a, b = pair(args.n, put, upsert)
    results.append(report("env put, SQLite", a, b, "sqlite3 upsert in its own transaction", 1.5))
    conn.close()
    ws.close()

    n = max(args.n // 4, 10)
    results += bench_claims(args.bin, goclaim, root, n, "directory")
    results += bench_claims(args.bin, goclaim, "sqlite:" + db, n, "SQLite")
    if args.json:
        print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
