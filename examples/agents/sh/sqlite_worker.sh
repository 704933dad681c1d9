#!/bin/sh
# A Hivemind worker in POSIX shell on a workspace kept in one SQLite file:
# claim subtasks, write outputs, insert done markers, read the daemon's
# verdict on each. It uses only the sqlite3 shell (Debian: apt-get install
# sqlite3, 3.38 or newer for its JSON functions) — no workspaced binary,
# no jq, no Go. The SQL is that of docs/PROTOCOL.md, section 11.
#
#   sh sqlite_worker.sh sqlite:PATH TASK AGENT [TIMEOUT_SECONDS] [NOTE]
#
# NOTE (any text) is added to the summary of every output it writes.
# Every value goes into SQL through q, which quotes it as an SQL string
# literal (single quotes, each ' doubled: SQLite has no backslash
# escapes), and every JSON document is built by json_object: what an
# agent writes cannot break the SQL or the JSON.
#
# Each sqlite3 run is one connection with the protocol's settings
# (busy_timeout 10 s, WAL, synchronous=FULL, foreign keys); a run refused
# with "database is locked" after the timeout is run again until the
# worker's time is up. Every subtask it finishes is appended to the env
# entry "shell_progress", a read-modify-write with a version check.
set -eu

usage="usage: sqlite_worker.sh sqlite:PATH TASK AGENT [TIMEOUT_SECONDS] [NOTE]"
root=${1:?$usage}
task=${2:?$usage}
agent=${3:?$usage}
timeout=${4:-60}
note=${5:-}

command -v sqlite3 >/dev/null 2>&1 || { echo "sqlite_worker.sh: the sqlite3 shell is required (apt-get install sqlite3)" >&2; exit 1; }

# The database file of sqlite:PATH, sqlite:///abs/path or
# sqlite://localhost/abs/path.
case "$root" in
  sqlite://localhost/*) db=${root#sqlite://localhost} ;;
  sqlite:///*) db=${root#sqlite://} ;;
  sqlite://*) echo "sqlite_worker.sh: $root: a SQLite database is a file on this machine" >&2; exit 2 ;;
  sqlite:?*) db=${root#sqlite:} ;;
  *) echo "$usage" >&2; exit 2 ;;
esac
[ -f "$db" ] || { echo "sqlite_worker.sh: no database $db (create it with workspaced --root '$root' init)" >&2; exit 3; }

tab=$(printf '\t')
errf=$(mktemp)
trap 'rm -f "$errf"' EXIT

end=$(( $(date +%s) + timeout ))
in_time() { [ "$(date +%s)" -lt "$end" ]; }

# q TEXT: TEXT as an SQL string literal.
q() {
  s=$(printf '%s' "$1" | sed "s/'/''/g"; echo x)
  printf "'%s'" "${s%x}"
}

# sql STATEMENTS: run them on one connection and print their rows, columns
# separated by tabs. Several statements run in order and stop at the first
# error (-bail); a write of several statements is one BEGIN IMMEDIATE …
# COMMIT, rolled back when the connection closes on an error.
sql() {
  while :; do
    if sqlite3 -batch -bail -noheader -separator "$tab" \
        -cmd '.timeout 10000' -cmd '.output /dev/null' -cmd 'PRAGMA journal_mode = WAL' -cmd '.output' \
        -cmd 'PRAGMA synchronous = FULL' -cmd 'PRAGMA foreign_keys = ON' \
        "$db" "$1" 2>"$errf"; then
      return 0
    fi
    # Still locked after busy_timeout: nothing was written; run it again.
    if grep -qi 'database is locked\|database table is locked\|busy' "$errf" && in_time; then
      sleep 0.05
      continue
    fi
    sed 's/^/sqlite_worker.sh: /' "$errf" >&2
    return 1
  done
}

T=$(q "$task")
A=$(q "$agent")
NOW="strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"

# unique: a random suffix; a marker's name must never be reused (the
# daemon journals each name once).
unique() {
  printf '%s-%s' "$(date +%s)" "$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
}

# marker KIND BODY_SQL: insert a marker (its body built by the SQL
# expression BODY_SQL) and print its name. One statement: committed, and
# the daemon woken, when sqlite3 returns.
marker() {
  m=".$1.$agent.$(unique)"
  sql "INSERT INTO markers (task_id, kind, name, body) VALUES ($T, $(q "$1"), $(q "$m"), $2);"
  printf '%s\n' "$m"
}

# verdict NAME: wait for the daemon's decision on marker NAME and print
# "<verdict><TAB><reason>": won or lost for a claim, applied or refused
# for a done marker, not_found for a subtask the plan does not have;
# "timeout" when the worker runs out of time. The journal row of NAME and
# the state are read in one statement (one snapshot; the daemon writes
# both in one transaction). The marker was refused if its record has
# "rejected", or the state's errors hold one with its seq — other than
# the failure a failed done marker reports itself.
verdict() {
  N=$(q "$1")
  while in_time; do
    v=$(sql "WITH r AS (
        SELECT j.seq, j.record, s.doc, json_extract(j.record, '\$.kind') AS kind,
               coalesce(json_extract(j.record, '\$.marker.subtask_id'), '') AS sid
        FROM journal j JOIN states s ON s.task_id = j.task_id
        WHERE j.task_id = $T AND j.name = $N),
      v AS (SELECT r.*, coalesce(nullif(json_extract(r.record, '\$.rejected'), ''),
          (SELECT json_extract(e.value, '\$.message') FROM json_each(r.doc, '\$.errors') e
           WHERE json_extract(e.value, '\$.seq') = r.seq
             AND NOT (r.kind = 'done' AND json_extract(r.record, '\$.marker.status') = 'failed'
               AND json_extract(e.value, '\$.message') = 'subtask ' || r.sid || ' failed: '
                 || coalesce(nullif(json_extract(r.record, '\$.marker.error'), ''), 'failed without an error message'))
           ORDER BY e.key LIMIT 1)) AS reason FROM r)
      SELECT CASE
        WHEN reason IS NULL THEN CASE kind WHEN 'claim' THEN 'won' ELSE 'applied' END
        WHEN sid <> '' AND json_extract(doc, '\$.plan_status') = 'approved'
          AND NOT EXISTS (SELECT 1 FROM json_each(doc, '\$.subtasks') t WHERE t.key = sid) THEN 'not_found'
        WHEN kind = 'claim' THEN 'lost' ELSE 'refused' END,
        coalesce(reason, '')
      FROM v;")
    [ -z "$v" ] || { printf '%s\n' "$v"; return 0; }
    sleep 0.02
  done
  printf 'timeout\t\n'
}

# write_output SUBTASK: outputs/SUBTASK.json, in one statement that
# writes nothing when the state says the subtask is completed (its output
# is final then); fails in that case.
write_output() {
  S=$(q "$1")
  n=$(sql "INSERT INTO products (task_id, path, body)
      SELECT $T, 'outputs/' || $S || '.json',
        json_object('subtask_id', $S, 'worker_id', $A, 'status', 'completed',
                    'summary', 'done by ' || $A || $(q "${note:+: $note}"), 'completed_at', $NOW)
      WHERE NOT EXISTS (SELECT 1 FROM states s, json_each(s.doc, '\$.subtasks') j
        WHERE s.task_id = $T AND j.key = $S AND json_extract(j.value, '\$.status') = 'completed')
      ON CONFLICT (task_id, path) DO UPDATE SET body = excluded.body, updated_at = $NOW;
    SELECT changes();")
  [ "$n" = 1 ] || { echo "sqlite_worker.sh: subtask $1 is completed; its output is final" >&2; return 1; }
}

# env_append KEY ITEM: append the string ITEM to the list in the task's
# env entry KEY: read the entry and its version, write the new value only
# if the version is still the one read, and start over when another
# writer came first.
env_append() {
  K=$(q "$1") I=$(q "$2")
  where="scope = 'thread' AND owner = $T AND key = $K"
  while in_time; do
    row=$(sql "SELECT version, value FROM entries WHERE $where;")
    if [ -z "$row" ]; then
      n=$(sql "INSERT INTO entries (scope, owner, key, short_description, stored_by, created_at, updated_at, version, size, value)
          SELECT 'thread', $T, $K, 'Subtasks finished by the shell workers.', $A, $NOW, $NOW, 1, length(CAST(v AS BLOB)), v
          FROM (SELECT json_array($I) AS v) WHERE true
          ON CONFLICT (scope, owner, key) DO NOTHING;
        SELECT changes();")
    else
      version=${row%%"$tab"*} value=${row#*"$tab"}
      n=$(sql "UPDATE entries SET value = v, size = length(CAST(v AS BLOB)), version = version + 1,
            stored_by = $A, updated_at = $NOW
          FROM (SELECT json_insert($(q "$value"), '\$[#]', $I) AS v)
          WHERE $where AND version = $version;
        SELECT changes();")
    fi
    [ "$n" = 1 ] && return 0
  done
  return 1
}

# Wait for an approved plan (or a task already finished).
until [ "$(sql "SELECT json_extract(doc, '\$.plan_status') = 'approved'
    OR json_extract(doc, '\$.status') IN ('completed', 'failed', 'cancelled') FROM states WHERE task_id = $T;")" = 1 ]; do
  in_time || { echo "sqlite_worker.sh: no approved plan after ${timeout}s" >&2; exit 1; }
  sleep 0.05
done

finished=""
while in_time; do
  # One read of the state: the task's status, the subtask to take ("-"
  # for none), how many subtasks are not finished, and whether the
  # subtask is already ours. A subtask the state already gives us (a
  # claim that won late) comes first; else a pending one at random, so
  # workers rarely race for the same.
  row=$(sql "WITH s AS (SELECT doc FROM states WHERE task_id = $T),
      sub AS (SELECT j.key, json_extract(j.value, '\$.status') AS status, json_extract(j.value, '\$.worker') AS worker
              FROM s, json_each(s.doc, '\$.subtasks') j),
      mine AS (SELECT key FROM sub WHERE status = 'in_progress' AND worker = $A ORDER BY key LIMIT 1)
    SELECT json_extract(doc, '\$.status'),
      coalesce((SELECT key FROM mine), (SELECT key FROM sub WHERE status = 'pending' ORDER BY random() LIMIT 1), '-'),
      (SELECT count(*) FROM sub WHERE status NOT IN ('completed', 'failed')),
      CASE WHEN EXISTS (SELECT 1 FROM mine) THEN 'mine' ELSE 'new' END
    FROM s;")
  IFS=$tab read -r status target left whose <<EOF
$row
EOF
  [ "$status" = executing ] || break
  if [ "$target" = - ]; then
    [ "$left" -gt 0 ] || break
    sleep 0.05; continue
  fi
  S=$(q "$target")
  if [ "$whose" = new ]; then
    m=$(marker claim "json_object('agent_id', $A, 'subtask_id', $S, 'claimed_at', $NOW)")
    # The daemon takes the first valid claim and refuses the others; the
    # verdict says which this one was.
    case "$(verdict "$m")" in won*) ;; *) continue ;; esac
  fi
  write_output "$target" || continue
  env_append shell_progress "$target"
  m=$(marker done "json_object('agent_id', $A, 'subtask_id', $S, 'output_file', 'outputs/' || $S || '.json',
    'status', 'completed', 'completed_at', $NOW)")
  v=$(verdict "$m")
  case "$v" in
    applied*) ;;
    *) printf 'sqlite_worker.sh: done for %s: %s\n' "$target" "$v" >&2; continue ;;
  esac
  finished="$finished $target"
done
echo "$agent finished${finished:- nothing}"
