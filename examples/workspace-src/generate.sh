#!/bin/sh
# Regenerates ../workspace, the sample tree the README walks through, with
# the real CLI and daemon:
#   task_rest_auth  a REST-auth task part-way through: plan v1 sent
#                   back by the reviewer, plan v2 approved, st_1 done, st_2
#                   in progress, a friction entry;
#   task_arc_001    an ARC-style task: coordinator → solver → observer
#                   threads, the puzzle and the observed patterns in env data;
#   skills/         core and grids, which the observer's thread loads;
#   memory/         the house style (global) and the observer's own habits.
# Run from the repository root:  sh examples/workspace-src/generate.sh
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out="$repo/examples/workspace"
bin=$(mktemp -d)/workspaced
go build -o "$bin" "$repo/cmd/workspaced"
rm -rf "$out"
w() { "$bin" --root "$out" "$@"; }

w init >/dev/null
cp "$here/agents.json" "$out/config/agents.json"
w skill add --name core --file "$here/skill_core.md" >/dev/null
w skill add --name grids --file "$here/skill_grids.md" >/dev/null
w memory store --scope global --agent coordinator --key house_style --description "How answers are written" \
  --value '"Short sentences. Name the cells you mean, as (row, column)."' >/dev/null
w memory store --scope agent --agent observer --key grid_habits \
  --description "How I read a grid: rows first, then columns, then the corners" \
  --value '["rows", "columns", "corners"]' >/dev/null

# The binary itself in the background (not the function w, whose subshell
# would be what kill stops, leaving the daemon running).
"$bin" --root "$out" serve --rescan 200ms --grace 200ms --cleanup-interval 0 2>"$out/../.serve.log" &
serve=$!
trap 'kill $serve 2>/dev/null || true' EXIT
wait_state() { # task jq-condition
  i=0
  until [ -f "$out/tasks/$1/state.json" ] && jq -e "$2" "$out/tasks/$1/state.json" >/dev/null; do
    i=$((i + 1)); [ $i -lt 300 ] || { echo "timeout waiting for $1: $2" >&2; exit 1; }
    sleep 0.05
  done
}

# --- the REST-auth task ----------------------------------------------------
w task create --id task_rest_auth --description "Build a REST API for user authentication" \
  --context "This is for a FastAPI backend, Python 3.11" \
  --constraint "Must use JWT tokens" --constraint "Must include rate limiting" \
  --priority normal --submitted-by user --to orchestrator >/dev/null
w plan write --task task_rest_auth --agent orchestrator --file "$here/plan_v1.json" --propose >/dev/null
wait_state task_rest_auth '.plan_status == "proposed"'
w review write --task task_rest_auth --id plan_v1 --agent reviewer --file "$here/review_plan_v1.json" --done >/dev/null
wait_state task_rest_auth '.plan_status == "revision_needed"'
w plan write --task task_rest_auth --agent orchestrator --file "$here/plan_v2.json" --propose >/dev/null
wait_state task_rest_auth '.plan_status == "proposed" and .plan_version == 2'
w review write --task task_rest_auth --id plan_v2 --agent reviewer --file "$here/review_plan_v2.json" --done >/dev/null
wait_state task_rest_auth '.plan_status == "approved"'
w claim --task task_rest_auth --agent worker_1 --subtask st_1 >/dev/null
wait_state task_rest_auth '.subtasks.st_1.status == "in_progress"'
w output write --task task_rest_auth --subtask st_1 --agent worker_1 --file "$here/output_st_1.json" --done >/dev/null
wait_state task_rest_auth '.subtasks.st_1.status == "completed"'
w claim --task task_rest_auth --agent worker_2 --subtask st_2 >/dev/null
wait_state task_rest_auth '.subtasks.st_2.status == "in_progress"'
w friction add --type reviewer_pattern --task task_rest_auth --description "Reviewer flags missing rate limiting on auth endpoints" \
  --pattern "missing rate limiting" --suggested-action "Add rate limiting to the orchestrator's checklist for auth tasks" >/dev/null

# --- the ARC task ------------------------------------------------------------
w task create --id task_arc_001 --description "Solve ARC task training-001" --to coordinator >/dev/null
w thread new --task task_arc_001 --id th_solver --from coordinator --to solver \
  --message "Please solve ARC task training-001. Load the task, analyze it, and find the transformation rule." \
  --concern "find the transformation rule of training-001" --buffers env:arc_task >/dev/null
w env store --task task_arc_001 --agent solver --key arc_task \
  --description "The current ARC-AGI puzzle: task training-001, one 3x3 training pair and a 3x3 test input." \
  --value-file "$here/arc_task.json" >/dev/null
w thread new --thread th_solver --id th_observer --from solver --to observer \
  --message "What patterns do you notice in the current task? Focus on spatial relationships and color transformations." \
  --concern "patterns in arc_task" --buffers env:arc_task,env:observed_patterns \
  --skill-tags grids --primary-mode analysis >/dev/null
w thread update --task task_arc_001 --thread th_solver \
  --progress "Loaded the task; consulting the observer for pattern analysis" >/dev/null
w env store --task task_arc_001 --agent observer --key observed_patterns \
  --description "Patterns the observer found in arc_task: rotation by 180 degrees, colours preserved." \
  --value '["rotation_180", "colour_preserving"]' >/dev/null
w thread update --task task_arc_001 --thread th_observer --progress "two patterns stored in observed_patterns" >/dev/null

kill $serve; wait $serve 2>/dev/null || true
trap - EXIT
rm -f "$out/../.serve.log" "$out/.workspaced.lock"
find "$out" -name .locks -type d -prune -exec rm -rf {} +
"$bin" validate "$out"
