#!/bin/sh
# A Hivemind worker in POSIX shell: claim subtasks, write outputs, drop done
# markers, and let the daemon keep state.json true. It uses only files, mv
# (rename), sync (fsync) and flock(1) — no workspaced binary, no Go.
# It REQUIRES jq (to read state.json and build JSON) and flock(1)
# (util-linux).
#
#   sh worker.sh ROOT TASK AGENT [TIMEOUT_SECONDS]
#
# Protocol (docs/PROTOCOL.md): write every file as a temporary dot-file in
# the target's directory, fsync it, mv it over the target, fsync the
# directory. Only the daemon writes state.json; this worker reads it to see
# what is pending, and reads the daemon's verdict on each marker it drops
# (the journal record named after the marker, and the state that reflects
# it) to know whether its claim won and its done marker was applied. It
# writes outputs under the task's lock, keeping any output it replaces in
# outputs/history/. Every subtask it finishes is also appended to the env
# entry "shell_progress", a read-modify-write under the entry's flock — the
# same lock the Go CLI and the Python module take.
set -eu

usage="usage: worker.sh ROOT TASK AGENT [TIMEOUT_SECONDS]"
root=${1:?$usage}
task=${2:?$usage}
agent=${3:?$usage}
timeout=${4:-60}

command -v jq >/dev/null 2>&1 || { echo "worker.sh: jq is required (apt-get install jq)" >&2; exit 1; }
command -v flock >/dev/null 2>&1 || { echo "worker.sh: flock(1) is required (util-linux)" >&2; exit 1; }

dir="$root/tasks/$task"
[ -f "$dir/task.json" ] || { echo "worker.sh: no task $task under $root" >&2; exit 3; }

# RFC 3339 in UTC with milliseconds where date(1) can (GNU %3N), else .000.
if date -u +%3N 2>/dev/null | grep -q '^[0-9][0-9][0-9]$'; then
  now() { date -u +%Y-%m-%dT%H:%M:%S.%3NZ; }
else
  now() { date -u +%Y-%m-%dT%H:%M:%S.000Z; }
fi

# fsync one file or directory: GNU sync takes paths; elsewhere sync all.
fsync() { sync "$1" 2>/dev/null || sync; }

# unique: a random suffix, so no two files this worker (or any other)
# writes ever share a name. A marker's name must never be reused: the
# daemon journals each name once.
unique() {
  printf '%s-%s' "$(date +%s)" "$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
}

# atomic_write PATH: stdin → PATH, atomically and durably.
atomic_write() {
  d=$(dirname "$1"); b=$(basename "$1")
  tmp="$d/.$b.tmp-$(unique)"
  if ! cat >"$tmp"; then rm -f "$tmp"; return 1; fi
  fsync "$tmp"
  mv -f "$tmp" "$1"
  fsync "$d"
}

# marker PREFIX JSON: drop .claim.<agent>.<suffix> or .done.<agent>.<suffix>
# and print its name.
marker() {
  m="$1$agent.$(unique)"
  printf '%s\n' "$2" | atomic_write "$dir/$m"
  printf '%s\n' "$m"
}

state() { cat "$dir/state.json" 2>/dev/null || echo '{}'; }

# verdict NAME AFTER: wait for the daemon's decision on marker NAME, whose
# journal record follows seq AFTER (state.json's journal_seq when it was
# dropped), and print "<verdict><TAB><reason>": won or lost for a claim,
# applied or refused for a done marker, not_found for a subtask the plan
# does not have; "timeout" when the worker runs out of time. The record is
# the one whose "file" is NAME, in journal/<seq>.json or
# journal/<first>-<last>.json; once state.json's journal_seq reaches its
# seq, the marker was refused if the daemon rejected it ("rejected") or the
# state's errors hold one with its seq — other than the failure a failed
# done marker reports itself ("subtask <id> failed: <error>"). Gone with no
# record, it was refused if events.log says its name was journaled already.
verdict() {
  while in_time; do
    if [ ! -e "$dir/$1" ]; then
      files=""
      for f in "$dir"/journal/[0-9]*.json; do
        [ -e "$f" ] || continue
        b=${f##*/}; b=${b%.json}
        # Record files only: <seq>.json or <first>-<last>.json.
        case "$b" in *[!0-9-]*) continue ;; esac
        last=${b#*-}
        # 12 digits, zero-padded: strip the zeros for the shell's arithmetic.
        last=$(printf '%s' "$last" | sed 's/^0*//'); [ -n "$last" ] || last=0
        if [ "$last" -gt "$2" ]; then files="$files $f"; fi
      done
      rec=""
      if [ -n "$files" ]; then
        # shellcheck disable=SC2086
        rec=$(jq -c --arg f "$1" '(.records // [.])[] | select(.file == $f)' $files 2>/dev/null | head -n 1)
      fi
      if [ -n "$rec" ]; then
        v=$(state | jq -r --argjson rec "$rec" '
          ($rec.marker // {}) as $m
          | ("subtask \($m.subtask_id // "") failed: \(if ($m.error // "") == "" then "failed without an error message" else $m.error end)") as $failure
          | if (.journal_seq // 0) < $rec.seq then "wait"
            else
              (if ($rec.rejected // "") != "" then $rec.rejected
               else [(.errors // [])[] | select(.seq == $rec.seq) | .message
                     | select(($rec.kind == "done" and $m.status == "failed" and . == $failure) | not)] | first
               end) as $reason
              | ($m.subtask_id // "") as $sid
              | (if $reason == null then (if $rec.kind == "claim" then "won" else "applied" end)
                 elif $sid != "" and .plan_status == "approved" and (.subtasks[$sid] == null) then "not_found"
                 elif $rec.kind == "claim" then "lost" else "refused" end) + "\t" + ($reason // "")
            end')
        [ "$v" = wait ] || { printf '%s\n' "$v"; return 0; }
      elif [ -f "$dir/events.log" ]; then
        # Gone with no record: a name the journal held already is refused
        # without one, in a marker_refused line (attributes sorted, so
        # journaled= follows file=).
        j=$(grep -F " marker_refused " "$dir/events.log" | grep -F " file=$1 journaled=" | tail -n 1 |
          sed -n 's/.* journaled=\([0-9][0-9]*\).*/\1/p')
        if [ -n "$j" ]; then
          printf 'refused\tthis marker name was already used (journaled as seq %s); write a new marker with a fresh name\n' "$j"
          return 0
        fi
      fi
    fi
    sleep 0.02
  done
  printf 'timeout\t\n'
}

# write_output SUBTASK: stdin → outputs/SUBTASK.json, under the task's lock
# (the one the daemon holds while it applies markers): refused when the
# state says the subtask is completed (its output is final); an output it
# replaces is kept as outputs/history/SUBTASK.v<N>.json.
write_output() {
  out="$dir/outputs/$1.json" lock="$dir/.locks/task.lock"
  body=$(cat)
  mkdir -p "$dir/outputs" "$dir/.locks"
  (
    flock -w 30 9 || { echo "worker.sh: lock $lock still held after 30s: $(cat "$lock" 2>/dev/null)" >&2; exit 4; }
    printf '{"pid":%d,"agent":"%s","since":"%s"}\n' $$ "$agent" "$(now)" >"$lock"
    if [ "$(state | jq -r --arg s "$1" '.subtasks[$s].status // ""')" = completed ]; then
      echo "worker.sh: subtask $1 is completed; its output is final" >&2; exit 4
    fi
    if [ -f "$out" ] && [ "$(cat "$out")" != "$body" ]; then
      mkdir -p "$dir/outputs/history"
      esc=$(printf '%s' "$1" | sed 's/\./\\./g')
      n=$(ls "$dir/outputs/history" | sed -n "s/^$esc\.v\([1-9][0-9]*\)\.json\$/\1/p" | sort -n | tail -n 1)
      atomic_write "$dir/outputs/history/$1.v$(( ${n:-0} + 1 )).json" <"$out"
    fi
    printf '%s\n' "$body" | atomic_write "$out"
  ) 9>>"$lock"
}

# event NAME KEY VERSION: one events.log line, appended in one write.
event() {
  printf '%s %s %s agent=%s key=%s version=%s\n' "$(now)" "$1" "$task" "$agent" "$2" "$3" >>"$dir/events.log"
}

# env_append KEY ITEM: append ITEM (JSON) to the list in env entry KEY under
# the entry's lock, env/.locks/KEY.json.lock. KEY must be a plain
# [A-Za-z0-9._-] key not starting with '.' here (other bytes are
# percent-encoded in the file name; see docs/PROTOCOL.md).
env_append() {
  key=$1 item=$2 file="$dir/env/$1.json" lock="$dir/env/.locks/$1.json.lock"
  mkdir -p "$dir/env/.locks"
  (
    flock -w 30 9 || { echo "worker.sh: lock $lock still held after 30s: $(cat "$lock" 2>/dev/null)" >&2; exit 4; }
    # The holder record, for 'workspaced locks' and timeout messages. It
    # goes through a second descriptor: the flock stays with fd 9.
    printf '{"pid":%d,"agent":"%s","since":"%s"}\n' $$ "$agent" "$(now)" >"$lock"
    t=$(now)
    if [ -f "$file" ]; then
      jq --arg a "$agent" --arg t "$t" --argjson item "$item" \
        '{key, short_description, stored_by: $a, created_at, updated_at: $t, version: (.version + 1), value: (.value + [$item])}' "$file" \
        | atomic_write "$file"
      event env_updated "$key" "$(jq .version "$file")"
    else
      jq -n --arg k "$key" --arg a "$agent" --arg t "$t" --argjson item "$item" \
        '{key: $k, short_description: "Subtasks finished by the shell workers.", stored_by: $a, created_at: $t, updated_at: $t, version: 1, value: [$item]}' \
        | atomic_write "$file"
      event env_stored "$key" 1
    fi
  ) 9>>"$lock"
}

end=$(( $(date +%s) + timeout ))
in_time() { [ "$(date +%s)" -lt "$end" ]; }

# Wait for an approved plan.
until [ "$(state | jq -r '.plan_status // ""')" = approved ]; do
  in_time || { echo "worker.sh: no approved plan after ${timeout}s" >&2; exit 1; }
  sleep 0.05
done

finished=""
while in_time; do
  # One read of state.json, one jq: the task's status, the subtask to take
  # ("-" for none), how many subtasks are not finished, and whether the
  # subtask is already ours. A subtask the state already gives us (a claim
  # that won late) comes first; else a pending one, picked at random so
  # workers rarely race for the same.
  s=$(state)
  # shellcheck disable=SC2046
  set -- $(printf '%s' "$s" | jq -r --arg a "$agent" --argjson r "$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')" '
    (.subtasks // {} | to_entries) as $all
    | [$all[] | select(.value.status == "in_progress" and .value.worker == $a) | .key] as $mine
    | [$all[] | select(.value.status == "pending") | .key] as $p
    | [(.status // "none"),
       (if ($mine | length) > 0 then $mine[0] elif ($p | length) > 0 then $p[$r % ($p | length)] else "-" end),
       ([$all[] | select(.value.status != "completed" and .value.status != "failed")] | length | tostring),
       (if ($mine | length) > 0 then "mine" else "new" end)]
    | join(" ")')
  status=$1 target=$2 left=$3 whose=$4
  [ "$status" = executing ] || break
  if [ "$target" = - ]; then
    [ "$left" -gt 0 ] || break
    sleep 0.05; continue
  fi
  if [ "$whose" = new ]; then
    after=$(state | jq '.journal_seq // 0')
    m=$(marker .claim. "$(jq -cn --arg a "$agent" --arg s "$target" --arg t "$(now)" '{agent_id: $a, subtask_id: $s, claimed_at: $t}')")
    # The daemon takes the first valid claim and refuses the others; the
    # verdict says which this one was.
    case "$(verdict "$m" "$after")" in won*) ;; *) continue ;; esac
  fi
  jq -n --arg s "$target" --arg a "$agent" --arg t "$(now)" \
    '{subtask_id: $s, worker_id: $a, completed_at: $t, status: "completed", summary: ("done by " + $a)}' \
    | write_output "$target" || continue
  env_append shell_progress "\"$target\""
  after=$(state | jq '.journal_seq // 0')
  m=$(marker .done. "$(jq -cn --arg a "$agent" --arg s "$target" --arg t "$(now)" '{agent_id: $a, subtask_id: $s, output_file: ("outputs/" + $s + ".json"), status: "completed", completed_at: $t}')")
  v=$(verdict "$m" "$after")
  case "$v" in
    applied*) ;;
    *) printf 'worker.sh: done for %s: %s\n' "$target" "$v" >&2; continue ;;
  esac
  finished="$finished $target"
done
echo "$agent finished${finished:- nothing}"
