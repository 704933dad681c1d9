#!/bin/sh
# A Hivemind worker in POSIX shell: claim subtasks, write outputs, drop done
# markers. It uses only files, mv (rename), sync (fsync) and flock(1) — no
# workspaced binary. It REQUIRES jq (to read state.json and build JSON).
#
#   sh worker.sh ROOT TASK AGENT [TIMEOUT_SECONDS]
#
# Protocol (see the README): write every file as a temporary dot-file in the
# target's directory, sync it, mv it over the target, sync the directory.
# Only the daemon writes state.json; this worker reads it to see what is
# pending and whether its claim won.
set -eu

root=${1:?usage: worker.sh ROOT TASK AGENT [TIMEOUT]}
task=${2:?usage: worker.sh ROOT TASK AGENT [TIMEOUT]}
agent=${3:?usage: worker.sh ROOT TASK AGENT [TIMEOUT]}
timeout=${4:-60}

command -v jq >/dev/null 2>&1 || { echo "worker.sh: jq is required (apt-get install jq)" >&2; exit 1; }
command -v flock >/dev/null 2>&1 || { echo "worker.sh: flock(1) is required (util-linux)" >&2; exit 1; }

dir="$root/tasks/$task"
[ -f "$dir/task.json" ] || { echo "worker.sh: no task $task under $root" >&2; exit 3; }

now() { date -u +%Y-%m-%dT%H:%M:%S.000Z; }

# atomic_write PATH: stdin → PATH, atomically and durably.
atomic_write() {
  d=$(dirname "$1"); b=$(basename "$1")
  tmp="$d/.$b.tmp-$$-$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')"
  cat >"$tmp"
  sync "$tmp"
  mv -f "$tmp" "$1"
  sync "$d"
}

marker() { # marker PREFIX JSON
  printf '%s\n' "$2" | atomic_write "$dir/$1$agent.$(date +%s%N)-$$"
}

state() { cat "$dir/state.json" 2>/dev/null || echo '{}'; }

# env_append KEY ITEM: a read-modify-write of one env entry under its flock,
# the same lock file the Go CLI and the Python module take. KEY must be a
# plain [A-Za-z0-9._-] key here (other bytes are percent-encoded in the file
# name; see the README).
env_append() {
  key=$1 item=$2 file="$dir/env/$1.json"
  mkdir -p "$dir/env/.locks"
  (
    flock -w 30 9 || { echo "worker.sh: lock on $file timed out" >&2; exit 4; }
    # The holder record, for 'workspaced locks' (a separate open: the flock
    # stays with fd 9).
    printf '{"pid":%d,"agent":"%s","since":"%s"}' $$ "$agent" "$(now)" >"$dir/env/.locks/$key.json.lock"
    if [ -f "$file" ]; then
      jq --arg a "$agent" --arg t "$(now)" --argjson item "$item" \
        '{key, short_description, stored_by: $a, created_at, updated_at: $t, version: (.version + 1), value: (.value + [$item])}' "$file"
    else
      t=$(now)
      jq -n --arg k "$key" --arg a "$agent" --arg t "$t" --argjson item "$item" \
        '{key: $k, short_description: "Subtasks finished by the shell workers.", stored_by: $a, created_at: $t, updated_at: $t, version: 1, value: [$item]}'
    fi | atomic_write "$file"
    printf '%s env_updated %s agent=%s key=%s\n' "$(now)" "$task" "$agent" "$key" >>"$dir/events.log"
  ) 9>>"$dir/env/.locks/$key.json.lock"
}

end=$(( $(date +%s) + timeout ))
# Wait for an approved plan.
until [ "$(state | jq -r '.plan_status // ""')" = approved ]; do
  [ "$(date +%s)" -lt "$end" ] || { echo "worker.sh: no approved plan after ${timeout}s" >&2; exit 1; }
  sleep 0.05
done

finished=""
while [ "$(date +%s)" -lt "$end" ]; do
  s=$(state)
  status=$(printf '%s' "$s" | jq -r .status)
  [ "$status" = executing ] || break
  target=$(printf '%s' "$s" | jq -r '[.subtasks | to_entries[] | select(.value.status == "pending") | .key] | sort | .[0] // ""')
  if [ -z "$target" ]; then
    left=$(printf '%s' "$s" | jq '[.subtasks[] | select(.status != "completed" and .status != "failed")] | length')
    [ "$left" -gt 0 ] || break
    sleep 0.05; continue
  fi
  marker .claim. "$(jq -cn --arg a "$agent" --arg s "$target" --arg t "$(now)" '{agent_id: $a, subtask_id: $s, claimed_at: $t}')"
  # Wait for the daemon to decide the claim.
  while :; do
    st=$(state | jq -r --arg s "$target" '.subtasks[$s].status + " " + (.subtasks[$s].worker // "")')
    case "$st" in pending*) sleep 0.02 ;; *) break ;; esac
    [ "$(date +%s)" -lt "$end" ] || break
  done
  [ "$st" = "in_progress $agent" ] || continue   # another worker won
  mkdir -p "$dir/outputs"
  jq -n --arg s "$target" --arg a "$agent" --arg t "$(now)" \
    '{subtask_id: $s, worker_id: $a, completed_at: $t, status: "completed", summary: ("done by " + $a)}' \
    | atomic_write "$dir/outputs/$target.json"
  env_append shell_progress "\"$target\""
  marker .done. "$(jq -cn --arg a "$agent" --arg s "$target" --arg t "$(now)" '{agent_id: $a, subtask_id: $s, output_file: ("outputs/" + $s + ".json"), status: "completed", completed_at: $t}')"
  while [ "$(state | jq -r --arg s "$target" '.subtasks[$s].status')" = in_progress ]; do
    [ "$(date +%s)" -lt "$end" ] || break
    sleep 0.02
  done
  finished="$finished $target"
done
echo "$agent finished${finished:- nothing}"
