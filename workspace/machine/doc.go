// Package machine is the state machine of a task: a pure function that
// folds the daemon's journal records, one at a time, into the task's
// state.json and the events that go to events.log.
//
// Nothing here does I/O or reads a clock. Every timestamp the machine
// writes is the record's taken_at, so replaying the same journal over the
// same task gives the same state, byte for byte, on any machine and at any
// time: that is what lets the daemon recover from a crash by replaying
// journal/ past state.json's journal_seq, and what `workspaced state
// rebuild` relies on.
//
// # The task
//
//	            plan.json done            plan_review approved
//	planning ──────────────────▶ (plan_review) ───────────────▶ executing
//	   ▲   plan_status proposed          │                        │  │  │
//	   │                                 │ revision_needed        │  │  │ a subtask fails
//	   └─────────────────────────────────┘ or rejected            │  │  │ with no retry left
//	        plan_status revision_needed, revision_count+1         │  │  ▼
//	                                                              │  │ failed
//	             every subtask completed, every checkpoint approved │  │
//	                                                  completed ◀──┘  │
//	                                   a done marker with status      │
//	                                   "cancelled" (any unfinished) ──▶ cancelled
//
// Phases refine the status: planning → plan_review → work_in_progress →
// awaiting_checkpoint_review (every subtask done, a checkpoint awaits its
// review) → completed; or failed, or cancelled.
//
// # A subtask
//
//	blocked ──(every dependency completed)──▶ pending ──claim──▶ in_progress
//	                                            ▲  ▲                 │  │
//	                           failed, retry left  └─────────────────┘  │ done completed
//	                                            │                       ▼
//	                                            └── checkpoint ◀── completed
//	                                                revision_needed
//	in_progress ──done failed, no retry left──▶ failed (and the task fails)
//
// A done marker for a pending subtask is an implicit claim. A subtask sent
// back by a checkpoint revision goes to pending, or to blocked when one of
// its dependencies was sent back with it; it keeps its attempt count.
// Outside the checkpoint, a subtask not yet started that depends on one
// sent back is blocked again; one that already started is not touched.
//
// # Plans
//
// A proposal is taken while the task is planning and no plan is approved:
// a newer version replaces one still awaiting review, and after a
// revision only a newer version is taken. A plan for another task, with a
// repeated id, a dependency or checkpoint member naming no subtask, or a
// dependency cycle is refused. The plan's max_retries says how many failed
// attempts of a subtask go back to pending before the task fails.
//
// Once approved, a plan is amended, never replaced: a proposal while the
// task executes is judged by Amend against the running version — same
// id, newer, runnable; subtasks added, pending or blocked ones changed or
// withdrawn, nothing that started touched. By the record's
// amendment_review, it applies at once (plan_amended: the state tracks
// the new version) or waits in the state's amendment for a plan review
// (amendment_proposed), which applies it or drops it
// (amendment_rejected). Continue loads the waiting version for that
// review.
//
// # A checkpoint
//
//	pending ──(its subtasks all completed)──▶ awaiting_review ──approved──▶ approved
//	                                            ▲          │
//	                                            │          │ revision_needed or rejected
//	             its subtasks completed again   └── revision_needed ◀┘
//
// # Refusals
//
// A record the machine cannot apply is not an error of the daemon: the
// state records it in errors and an event (claim_refused for a claim,
// marker_refused for a done marker, output_rejected for a record the daemon
// already rejected on reading) says why; nothing else changes. Anything on
// a finished task (completed, failed, cancelled) is refused. A record whose
// seq is not past the state's journal_seq is ignored altogether, which
// makes replay idempotent.
//
// # Folding
//
// Apply takes one record; Step also returns the plan the new state tracks
// (a daemon keeps it between records); Replay folds a whole journal from
// task.json, and Continue folds it over a state read back from disk,
// loading the plan it tracks when no record in hand carries it.
//
// # Judging a marker
//
// Before a marker becomes a record, ParseMarker and Marker.Judge apply
// the reading rules every store shares (size, depth, the marker's schema,
// an output_file inside the task that agrees with subtask_id, the
// product's schema) and Judgement.Record stamps the record, checked
// against the journal schema; a refusal becomes a record with rejected
// set. Judge reads the verdict on a record back from the state it left.
//
// # Workers
//
// Every agent that takes a subtask (by a claim, or by a done marker for a
// pending subtask) has a workers entry: busy with its current subtask
// while it holds one in progress, available otherwise. Agents that only
// propose plans, review or cancel are not workers. When the task finishes every worker is available.
package machine
