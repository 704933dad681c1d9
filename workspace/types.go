// Package workspace is the model and the contract every store keeps:
// the types of tasks, plans, outputs, reviews, threads, entries, markers
// and events (and their ids, settings, errors and the event format),
// the pure builders and validators a store judges agents' writes with,
// and the interfaces a store implements (Store, Served and the optional
// capabilities), with Wait and the verdicts an agent reads back.
//
// It reads and writes no file and no database: the stores do
// (workspace/files for a directory tree; workspace/sqlstore over the
// workspace/postgres and workspace/sqlite drivers for databases), and
// workspace/ops assembles context over any of them.
package workspace

import (
	"encoding/json"
	"time"
)

// The Go types below are the shapes of the files in the tree. Field order is
// the order in which they are written (canonical JSON); the JSON Schemas in
// schemas/ describe the same shapes for agents in other languages. Extra
// fields written by agents are tolerated by the schemas, but a round trip
// through these types drops them, so only files the workspace itself owns
// (state.json, entries, threads it writes) are ever rewritten from them.

// Task is task.json: the definition of a root thread, immutable once written.
type Task struct {
	ID          string    `json:"id"`
	CreatedAt   time.Time `json:"created_at"`
	Description string    `json:"description"`
	Context     string    `json:"context,omitempty"`
	Constraints []string  `json:"constraints,omitempty"`
	Priority    string    `json:"priority,omitempty"`
	SubmittedBy string    `json:"submitted_by,omitempty"`
}

// Plan is plan.json: the current plan of a task, written by an agent.
// Every write bumps Version; the previous version is kept in
// plans/plan_v<N>.json.
type Plan struct {
	ID          string       `json:"id"`
	TaskID      string       `json:"task_id"`
	Version     int          `json:"version"`
	CreatedAt   time.Time    `json:"created_at,omitzero"`
	CreatedBy   string       `json:"created_by,omitempty"`
	Status      string       `json:"status,omitempty"` // draft | proposed | approved | revision_needed
	Summary     string       `json:"summary,omitempty"`
	Subtasks    []Subtask    `json:"subtasks"`
	Checkpoints []Checkpoint `json:"checkpoints,omitempty"`
	WorkerCount int          `json:"worker_count,omitempty"`
	Risks       []string     `json:"risks,omitempty"`
	Assumptions []string     `json:"assumptions,omitempty"`
}

// Subtask is one unit of work in a plan.
type Subtask struct {
	ID                  string   `json:"id"`
	Description         string   `json:"description"`
	Dependencies        []string `json:"dependencies,omitempty"`
	EstimatedComplexity string   `json:"estimated_complexity,omitempty"` // low | medium | high
	Parallelizable      bool     `json:"parallelizable,omitempty"`
	// MaxRetries is how many failed attempts are sent back to pending
	// before the subtask (and with it the task) fails. Default 0.
	MaxRetries int `json:"max_retries,omitempty"`
}

// Checkpoint groups subtasks whose completion must be reviewed
// (a checkpoint_review) before the task can complete.
type Checkpoint struct {
	ID          string   `json:"id"`
	Description string   `json:"description,omitempty"`
	Subtasks    []string `json:"subtasks"`
}

// Output is outputs/<subtask_id>.json: the product of one subtask.
type Output struct {
	SubtaskID     string            `json:"subtask_id"`
	WorkerID      string            `json:"worker_id,omitempty"`
	CompletedAt   *time.Time        `json:"completed_at,omitempty"`
	Status        string            `json:"status,omitempty"` // completed | failed
	Summary       string            `json:"summary,omitempty"`
	FilesCreated  []string          `json:"files_created,omitempty"`
	FilesModified []string          `json:"files_modified,omitempty"`
	Decisions     []string          `json:"decisions,omitempty"`
	Code          map[string]string `json:"code,omitempty"`
	Error         string            `json:"error,omitempty"`
}

// Review is reviews/<review_id>.json: one review decision.
type Review struct {
	ID         string        `json:"id"`
	Type       string        `json:"type"` // plan_review | checkpoint_review | output_review
	Target     string        `json:"target,omitempty"`
	Reviewer   string        `json:"reviewer,omitempty"`
	ReviewedAt *time.Time    `json:"reviewed_at,omitempty"`
	Verdict    string        `json:"verdict"` // approved | revision_needed | rejected
	Issues     []ReviewIssue `json:"issues,omitempty"`
	Notes      string        `json:"notes,omitempty"`
	// Escalate, when set, says the reviewer hands the decision to a human.
	Escalate string `json:"escalate,omitempty"`
}

// ReviewIssue is one problem a reviewer found.
type ReviewIssue struct {
	Severity   string `json:"severity,omitempty"`
	Location   string `json:"location,omitempty"`
	Problem    string `json:"problem"`
	Suggestion string `json:"suggestion,omitempty"`
}

// Entry is one key-value entry in any scope (env data, session, agent and
// global memory). Value is written last so a manifest reader can stop
// after short_description.
type Entry struct {
	Key              string          `json:"key"`
	ShortDescription string          `json:"short_description"`
	StoredBy         string          `json:"stored_by"`
	CreatedAt        time.Time       `json:"created_at"`
	UpdatedAt        time.Time       `json:"updated_at"`
	Version          int             `json:"version"`
	Value            json.RawMessage `json:"value"`
}

// ManifestItem is one line of a list: everything but the value.
type ManifestItem struct {
	Key              string    `json:"key"`
	ShortDescription string    `json:"short_description"`
	StoredBy         string    `json:"stored_by"`
	UpdatedAt        time.Time `json:"updated_at"`
	Version          int       `json:"version"`
	Size             int64     `json:"size"`
}

// Thread is threads/<id>.json: one delegation thread. The root thread of a
// task has the task's id and no parent.
type Thread struct {
	ID        string    `json:"id"`
	ParentID  string    `json:"parent_id,omitempty"`
	TaskID    string    `json:"task_id"`
	From      string    `json:"from"`
	To        string    `json:"to"`
	Message   string    `json:"message,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
	Status    string    `json:"status"` // active | pending | done
	Concern   string    `json:"concern,omitempty"`
	Approach  string    `json:"approach,omitempty"`
	// Buffers name what the thread looks at: env:<key>,
	// memory:<scope>:<key>, or a file path inside the task directory.
	Buffers   []string `json:"buffers,omitempty"`
	SkillTags []string `json:"skill_tags,omitempty"`
	Progress  string   `json:"progress,omitempty"`
	// PrimaryMode is the kind of work the thread does ("analysis"); it
	// loads the skills whose modes contain it.
	PrimaryMode string `json:"primary_mode,omitempty"`
	// ActivatedAt is when the thread was last made its agent's active
	// thread (ActivateThread).
	ActivatedAt time.Time `json:"activated_at,omitzero"`
}

// AgentCards is config/agents.json.
type AgentCards struct {
	Agents []AgentCard `json:"agents"`
}

// AgentCard describes one agent to the others.
type AgentCard struct {
	Name         string   `json:"name"`
	Description  string   `json:"description,omitempty"`
	Role         string   `json:"role,omitempty"`
	Capabilities []string `json:"capabilities,omitempty"`
	// DelegationContext turns the delegation preamble on (nil means true).
	DelegationContext *bool    `json:"delegation_context,omitempty"`
	PreambleDetail    string   `json:"preamble_detail,omitempty"` // minimal | standard | verbose
	GlobalBuffers     []string `json:"global_buffers,omitempty"`
	// Skills are loaded into every thread context of the agent, whatever
	// the thread's tags and mode.
	Skills []string `json:"skills,omitempty"`
	// MemoryInContext lists the agent's memory and the global memory in
	// its system context (nil means true).
	MemoryInContext *bool `json:"memory_in_context,omitempty"`
}

// Marker is the content of a .claim.* or .done.* marker file.
type Marker struct {
	AgentID     string     `json:"agent_id"`
	SubtaskID   string     `json:"subtask_id,omitempty"`
	OutputFile  string     `json:"output_file,omitempty"`
	Status      string     `json:"status,omitempty"` // done: completed (default) | failed
	Error       string     `json:"error,omitempty"`
	Escalate    string     `json:"escalate,omitempty"`
	ClaimedAt   *time.Time `json:"claimed_at,omitempty"`
	CompletedAt *time.Time `json:"completed_at,omitempty"`
	// Token is the id of the token the marker was dropped with (tk_…),
	// never the token: a store sets it from the write's context
	// (WithToken), and the daemon names it in the events of the marker.
	Token string `json:"token,omitempty"`
}

// State is state.json: the execution state of one task, written only by
// the daemon.
type State struct {
	TaskID        string                      `json:"task_id"`
	PlanID        string                      `json:"plan_id,omitempty"`
	PlanVersion   int                         `json:"plan_version,omitempty"`
	PlanStatus    string                      `json:"plan_status,omitempty"` // none | proposed | approved | revision_needed
	Status        string                      `json:"status"`                // planning | executing | completed | failed | cancelled
	Phase         string                      `json:"phase"`
	StartedAt     *time.Time                  `json:"started_at,omitempty"`
	LastUpdated   time.Time                   `json:"last_updated"`
	CompletedAt   *time.Time                  `json:"completed_at,omitempty"`
	Subtasks      map[string]*SubtaskState    `json:"subtasks"`
	Checkpoints   map[string]*CheckpointState `json:"checkpoints"`
	Workers       map[string]*WorkerState     `json:"workers"`
	RevisionCount int                         `json:"revision_count"`
	// Amendment is the amendment of the running plan that awaits its
	// review; nil when none does.
	Amendment  *AmendmentState `json:"amendment,omitempty"`
	Errors     []StateError    `json:"errors"`
	JournalSeq int64           `json:"journal_seq"`
}

// SubtaskState is one subtask's progress.
type SubtaskState struct {
	Status      string     `json:"status"` // blocked | pending | in_progress | completed | failed
	Worker      string     `json:"worker,omitempty"`
	BlockedBy   []string   `json:"blocked_by,omitempty"`
	Attempts    int        `json:"attempts,omitempty"`
	StartedAt   *time.Time `json:"started_at,omitempty"`
	CompletedAt *time.Time `json:"completed_at,omitempty"`
	Output      string     `json:"output,omitempty"`
	Error       string     `json:"error,omitempty"`
}

// CheckpointState is one checkpoint's progress.
type CheckpointState struct {
	Status     string     `json:"status"` // pending | awaiting_review | approved | revision_needed
	ReachedAt  *time.Time `json:"reached_at,omitempty"`
	ReviewedAt *time.Time `json:"reviewed_at,omitempty"`
	Review     string     `json:"review,omitempty"`
}

// AmendmentState is an amendment of the running plan awaiting its plan
// review: the version that would replace the running one, who proposed
// it and when, and what it would change.
type AmendmentState struct {
	Version    int       `json:"version"`
	ProposedBy string    `json:"proposed_by,omitempty"`
	ProposedAt time.Time `json:"proposed_at"`
	Added      []string  `json:"added,omitempty"`
	Changed    []string  `json:"changed,omitempty"`
	Withdrawn  []string  `json:"withdrawn,omitempty"`
}

// WorkerState is one worker's availability.
type WorkerState struct {
	Status      string `json:"status"` // available | busy
	CurrentTask string `json:"current_task,omitempty"`
}

// StateError records something that went wrong while applying a marker,
// or a marker the machine refused (every refusal is one entry, with the
// record's seq: that is how an agent reads its verdict).
type StateError struct {
	At        time.Time `json:"at"`
	Seq       int64     `json:"seq,omitempty"`
	Agent     string    `json:"agent,omitempty"`
	SubtaskID string    `json:"subtask_id,omitempty"`
	Message   string    `json:"message"`
	// Kind is ErrorClaimRefused for a refused claim — a lost race among
	// them, which is normal and no error of the task — and empty for
	// everything else.
	Kind string `json:"kind,omitempty"`
}

// ErrorClaimRefused is the Kind of a StateError that records a refused
// claim, named as the claim_refused event that tells it.
const ErrorClaimRefused = "claim_refused"

// TaskErrors are the entries of errors that are errors of the task: all
// but the refused claims.
func TaskErrors(errors []StateError) []StateError {
	var out []StateError
	for _, e := range errors {
		if e.Kind != ErrorClaimRefused {
			out = append(out, e)
		}
	}
	return out
}

// Event is one line of events.log.
type Event struct {
	Time   time.Time         `json:"time"`
	Name   string            `json:"event"`
	TaskID string            `json:"task_id"`
	Args   []string          `json:"args,omitempty"`
	Attrs  map[string]string `json:"attrs,omitempty"`
}

// JournalRecord is journal/<seq>.json: one marker the daemon has taken, in
// the order taken. The record carries everything the state machine needs,
// so replaying the journal over task.json reproduces state.json exactly.
type JournalRecord struct {
	Seq     int64     `json:"seq"`
	TakenAt time.Time `json:"taken_at"`
	// File is the marker's name when it was dropped (".done.worker_1").
	File   string `json:"file"`
	Kind   string `json:"kind"` // claim | done
	Marker Marker `json:"marker"`
	// Rejected is the reason a marker was refused; the state only records
	// the error.
	Rejected string `json:"rejected,omitempty"`
	// Product snapshots, taken when a done marker is journaled: the plan
	// it proposes (output_file plan.json) or the review it reports
	// (reviews/<id>.json). Outputs need no snapshot: the marker's status
	// is what the state records.
	Plan   *Plan   `json:"plan,omitempty"`
	Review *Review `json:"review,omitempty"`
	// AmendmentReview is the workspace's amendment_review setting when
	// the daemon took a marker proposing a plan: whether that plan, if it
	// amends a running one, waits for a review is decided by it, so a
	// replay decides the same whatever the settings are by then. Empty
	// (records written before the setting) is AmendReviewChanges.
	AmendmentReview string `json:"amendment_review,omitempty"`
}

// Record kinds.
const (
	KindClaim = "claim"
	KindDone  = "done"
)

// Verdict is the daemon's decision on one marker, and what the state said
// when it was read.
type Verdict struct {
	Marker  string `json:"marker"` // the marker's file name
	TaskID  string `json:"task_id"`
	Kind    string `json:"kind"` // claim | done
	Verdict string `json:"verdict"`
	// Seq is the journal record the marker became; 0 for a marker
	// refused for its reused name, which became none.
	Seq int64 `json:"seq"`
	// Journaled is, for a marker refused because its name was used
	// already, the seq of the record that holds the name.
	Journaled int64  `json:"journaled,omitempty"`
	Reason    string `json:"reason,omitempty"`
	SubtaskID string `json:"subtask_id,omitempty"`
	// SubtaskStatus and Worker are the subtask's in the state read, and
	// TaskStatus the task's (they may have moved on past the marker).
	SubtaskStatus string `json:"subtask_status,omitempty"`
	Worker        string `json:"worker,omitempty"`
	TaskStatus    string `json:"task_status"`
}

// AgentsFile is the agent cards file relative to the root.
const AgentsFile = "config/agents.json"

// Card returns the card of one agent, and false if it has none.
func (c AgentCards) Card(name string) (AgentCard, bool) {
	for _, a := range c.Agents {
		if a.Name == name {
			return a, true
		}
	}
	return AgentCard{}, false
}

// WantsPreamble reports whether the card asks for delegation context
// (the default when unset).
func (a AgentCard) WantsPreamble() bool { return a.DelegationContext == nil || *a.DelegationContext }

// WantsMemory reports whether the card asks for its memory in the system
// context (the default when unset).
func (a AgentCard) WantsMemory() bool { return a.MemoryInContext == nil || *a.MemoryInContext }
