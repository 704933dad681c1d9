package workspace

import (
	"context"
	"encoding/json"
	"time"
)

// Store is a workspace as every consumer sees it: the CLI, the MCP
// server, the demo, cleanup, friction and context assembly go through it
// and know nothing of how it is kept. The file tree is one Store
// (workspace/files); another backend implements the same methods with the
// same guarantees, and workspace/storetest is the suite both pass.
//
// Rules every implementation keeps:
//   - Errors are *Error values whose Kind is one of the sentinels of
//     errors.go, so errors.Is(err, ErrNotFound|ErrConflict|ErrInvalid|
//     ErrLocked) means the same on every backend. Input is checked before
//     anything is written (ValidateID, ValidateKey, ParseValue and the
//     schemas); a refused write changes nothing.
//   - Every method but Settings, Now and Close takes the caller's
//     context first; a store may give up when it ends (with its error).
//   - Times are the store's clock (Now), kept to the millisecond.
//   - Listings are sorted as the file tree sorts them: manifests by key,
//     task ids by id, threads by creation time then id, reviews by
//     reviewed_at then id, skills by name, backups newest first, events
//     in append order.
//   - Entry versions start at 1 and grow by one on every write; an
//     UpdateRequest or DeleteRequest whose IfVersion no longer matches,
//     and a StoreRequest with IfAbsent of a key that exists, are
//     ErrConflict and change nothing.
//   - Markers are requests: WriteClaim and WriteDone only record them.
//     State changes when the store's single writer (the daemon) applies
//     them, exactly once, in the order they were taken; the first claim
//     of a subtask wins.
//
// What is the same on every backend — context assembly, the preamble,
// the system context, provenance chains, thread activation — is workspace/ops,
// over any Store: ops.Over(s).Context(...).
//
// The operations are grouped by what a consumer does with them; each
// group is an interface of its own so that a function asks only for what
// it uses (the context assembly, for one, reads and never writes).
type Store interface {
	Reader
	LiveReader
	Entries
	JournalReader
	TaskWriter
	ThreadWriter
	Markers
	EventStore
	FrictionStore
	Locker
	BackupStore
	Retention
	SkillStore

	// Close releases what the store holds (file handles, connections).
	Close() error
}

// Reader is what assembling an agent's context, its preamble and its
// system context reads: settings, agent cards, tasks, threads, plans,
// products, state, entries and skills. Nothing in it writes.
type Reader interface {
	// Settings are the workspace's effective settings.
	Settings() Settings
	// Now is the store's clock.
	Now() time.Time

	// LoadAgents returns the agent cards; none stored is an empty list.
	LoadAgents(ctx context.Context) (AgentCards, error)

	// GetTask returns a task's definition (ErrNotFound when none).
	GetTask(ctx context.Context, id string) (Task, error)
	// TaskIDs lists the tasks, sorted by id.
	TaskIDs(ctx context.Context) ([]string, error)
	// ListTasks lists every task with its state when one was written.
	ListTasks(ctx context.Context) ([]TaskSummary, error)

	// GetThread returns one thread of a task (ErrNotFound when none).
	GetThread(ctx context.Context, taskID, id string) (Thread, error)
	// ListThreads lists a task's threads by creation time, then id.
	ListThreads(ctx context.Context, taskID string) ([]Thread, error)
	// ResolveThread returns the task a thread id belongs to; a task id
	// is its own root thread.
	ResolveThread(ctx context.Context, threadID string) (string, error)

	// ReadPlan returns the current plan (version 0) or an earlier
	// version; ErrNotFound when the task has no plan yet or the version
	// was never written.
	ReadPlan(ctx context.Context, taskID string, version int) (*Plan, error)
	// ReadTaskDoc returns one JSON document of a task by its name in the
	// protocol ("plan.json", "outputs/s1.json", "reviews/r1.json",
	// "plans/plan_v2.json", "outputs/history/s1_v1.json"), compacted.
	ReadTaskDoc(ctx context.Context, taskID, name string) (json.RawMessage, error)
	// ReadProduct reads and validates what a done marker's output_file
	// names.
	ReadProduct(ctx context.Context, taskID, outputFile string) (Product, error)
	// ValidateProduct checks a product as ReadProduct does.
	ValidateProduct(ctx context.Context, taskID, outputFile string) error
	// ListReviews returns a task's reviews, by reviewed_at then id; what
	// cannot be read is reported in the second list, not failed on.
	ListReviews(ctx context.Context, taskID string) ([]Review, []Skipped, error)

	// ReadState returns the task's state as the daemon last wrote it
	// (ErrNotFound before the first write).
	ReadState(ctx context.Context, taskID string) (State, error)
	// ReadStateHead reads the head of the task's state (ParseStateHead:
	// its id, status, phase and journal_seq) without decoding the rest:
	// what dropping a marker needs to know of a task of any size
	// (ErrNotFound before the first write).
	ReadStateHead(ctx context.Context, taskID string) (StateHead, error)
	// GetSkill and ListSkills read the workspace's skills.
	GetSkill(ctx context.Context, name string) (Skill, error)
	ListSkills(ctx context.Context) ([]Skill, []RefusedSkill, error)

	// ReadTaskFile reads a file a thread's buffer names inside a task
	// (a product or any document an agent wrote there), at most max
	// bytes: larger, or anything but plain data, is ErrUnsafe; a name
	// outside the task is ErrInvalid.
	ReadTaskFile(ctx context.Context, taskID, name string, max int64) ([]byte, error)

	// Entries are readable through the same store.
	GetEntry(ctx context.Context, s Scope, key string) (Entry, error)
	ListEntries(ctx context.Context, s Scope) ([]ManifestItem, error)
}

// LiveReader is what a live view of the workspace reads beside Reader:
// a task's events from a position on, and who keeps memory.
type LiveReader interface {
	// ReadEventsFrom calls each for every event of task taskID after
	// position pos, oldest first, and returns the position to read from
	// next. Positions are opaque cursors of the store (on files, byte
	// offsets in events.log; they need not grow): 0 is the start, a
	// PositionedEvent's End is the position just after it, its Start one
	// that reads it again (the End of the event before it), and both stay
	// valid for good (events are only ever appended). Reading on from the
	// position a read gave back never skips an event that commits later,
	// on any store, nor gives one twice; on PostgreSQL an event is
	// readable once the transactions older than its own have ended, so it
	// may come a moment after its write returned. An event
	// that does not parse is passed over. A task without events gives
	// pos back; a missing task is ErrNotFound, a negative pos ErrInvalid.
	ReadEventsFrom(ctx context.Context, taskID string, pos int64, each func(PositionedEvent)) (int64, error)
	// MemoryAgents lists the agents that keep memory, sorted by name.
	MemoryAgents(ctx context.Context) ([]string, error)
}

// Change is what a Watcher reports: what changed in the store since its
// previous report. A report may name what did not change (a write that
// left a document as it was); it never leaves out what did.
type Change struct {
	// Tasks changed: created, removed, or any of their definition,
	// state, plan, products, threads, env data or events.
	Tasks []string
	// Friction and Memory say whether the friction log, or the global or
	// an agent's memory, changed.
	Friction, Memory bool
	// Everything says changes may have been missed (the watch has just
	// begun, or lost track of the store): a watcher looks at everything
	// again.
	Everything bool
	// Err, when set, is trouble the watch met and got over as best it
	// could (a lost connection, a directory it cannot watch); the watch
	// goes on.
	Err error
}

// JournalReader reads what the single writer has taken.
type JournalReader interface {
	// ReadJournal returns the markers the daemon has taken for a task,
	// in sequence order (empty before the first).
	ReadJournal(ctx context.Context, taskID string) ([]JournalRecord, error)
}

// TaskWriter creates tasks and writes agents' products: plans (each
// write a new version, the previous kept), outputs and reviews (an
// earlier one kept in history on replace), and the agent cards.
type TaskWriter interface {
	CreateTask(ctx context.Context, req NewTaskRequest) (Task, error)
	// WritePlan writes the next version of a plan not yet approved; once
	// the plan is approved, or the task finished, it is refused
	// (PlanClosed) before anything is written, decided in the write that
	// holds the task against the daemon's commit of its state.
	WritePlan(ctx context.Context, taskID, agent string, data []byte) (Plan, error)
	// WriteAmendment writes the next version of an approved plan, an
	// amendment of the running one for the daemon to judge; refused as
	// WritePlan is, the other way round (PlanClosed with amend).
	WriteAmendment(ctx context.Context, taskID, agent string, data []byte) (Plan, error)
	// WriteOutput and WriteReview return the product's name in the
	// protocol ("outputs/s1.json"), the output_file of a done marker.
	WriteOutput(ctx context.Context, taskID, subtaskID, agent string, data []byte) (string, error)
	WriteReview(ctx context.Context, taskID, reviewID, agent string, data []byte) (string, error)
	// SaveAgents replaces the agent cards.
	SaveAgents(ctx context.Context, cards AgentCards) error
}

// ThreadWriter starts and changes delegation threads.
type ThreadWriter interface {
	NewThread(ctx context.Context, req NewThreadRequest) (Thread, error)
	UpdateThread(ctx context.Context, taskID, id, agent string, u ThreadUpdate) (Thread, error)
	// ModifyThread is a read-modify-write of one thread (see Backend).
	ModifyThread(ctx context.Context, taskID, id, agent string, change func(t *Thread) (bool, error)) (Thread, error)
}

// Markers records an agent's claim of a subtask and its report of being
// done. Each returns the marker's name, which the daemon's verdict for it
// is found by.
type Markers interface {
	WriteClaim(ctx context.Context, taskID, agent, subtaskID string) (string, error)
	WriteDone(ctx context.Context, req DoneRequest) (string, error)
}

// EventStore is each task's event feed.
type EventStore interface {
	AppendEvent(ctx context.Context, e Event) error
	AppendEvents(ctx context.Context, taskID string, evs []Event) error
	// ReadEvents returns a task's events in append order; events that do
	// not parse are returned as errors in the second list.
	ReadEvents(ctx context.Context, taskID string) ([]Event, []error, error)
	// MergeEvents calls each for every event of the given tasks (all
	// tasks when none), merged in time order.
	MergeEvents(ctx context.Context, taskIDs []string, each func(Event) error) ([]BadLines, error)
	// FollowEvents calls each for every new event of a task (every task
	// when taskID is ""), after the existing ones when fromStart, until
	// ctx ends. interval bounds how long a new event may wait.
	FollowEvents(ctx context.Context, taskID string, fromStart bool, interval time.Duration, each func(Event)) error
}

// FrictionDoc keeps the friction log's one document: friction.json on
// files, its row of the files table in a database. The friction package
// does everything else over it, the same on every store: it checks the
// document it reads, applies the change and encodes the result.
type FrictionDoc interface {
	// Name names the document in messages.
	Name() string
	// Read returns the document's bytes, nil when there is none yet.
	Read(ctx context.Context) ([]byte, error)
	// Update is one read-modify-write under the document's lock, waiting
	// at most timeout for it: it reads the document (nil when none),
	// calls change with it, and stores what change returns, unless that
	// is nil (nothing to write). An error from change writes nothing and
	// is returned. A lock still held after timeout is an error naming its
	// holder (locking's TimeoutError); agent names this writer to others.
	Update(ctx context.Context, agent string, timeout time.Duration, change func(old []byte) ([]byte, error)) error
}

// FrictionStore keeps the friction log (see FrictionDoc) and notes what
// it records in the tasks' events.
type FrictionStore interface {
	FrictionDoc() FrictionDoc
	// NoteFriction appends ev, a friction_recorded event, to the events
	// of each of tasks that still exists, with its TaskID set to it. It is
	// best effort: an entry is recorded whether or not its events are.
	NoteFriction(ctx context.Context, ev Event, tasks []string)
}

// Lock is a lock a Locker gave; Release gives it back (once).
type Lock interface {
	Release() error
}

// LockInfo is one lock of a workspace as Locks lists it.
type LockInfo struct {
	// Name identifies the lock in the store's words (on files, the lock
	// file's path from the root).
	Name string `json:"path"`
	// TaskID and Lock say which lock it is when it is a task's ("task"
	// for the whole task's lock); both empty for the store's own locks.
	TaskID string `json:"task_id,omitempty"`
	Lock   string `json:"lock,omitempty"`
	Held   bool   `json:"held"`
	// Holder is the latest holder's record (stale when !Held), or nil.
	Holder *LockHolder `json:"holder"`
}

// LockHolder is the record a lock's latest holder left: the same fields,
// in the same JSON, as the holder record of a lock file.
type LockHolder struct {
	PID   int       `json:"pid"`
	Agent string    `json:"agent,omitempty"`
	Since time.Time `json:"since"`
	Host  string    `json:"host,omitempty"`
}

// Locker takes the locks agents coordinate with.
type Locker interface {
	// LockTaskNamed takes a task's lock named name, or the whole task's
	// lock (the one the daemon and cleanup take) when name is "". It
	// waits up to the lock timeout of the settings; a timeout is
	// ErrLocked naming the holder, a missing task ErrNotFound, a bad name
	// ErrInvalid.
	LockTaskNamed(ctx context.Context, taskID, name, agent string) (Lock, error)
	// Locks lists the workspace's locks, held or not.
	Locks(ctx context.Context) ([]LockInfo, error)
}

// BackupInfo is one kept copy of a task's state.
type BackupInfo struct {
	Name string
	Time time.Time
	Size int64
}

// BackupStore keeps the previous states of each task.
type BackupStore interface {
	// ListBackups lists a task's backups, newest first.
	ListBackups(ctx context.Context, taskID string) ([]BackupInfo, error)
	// ReadBackup returns one backup's state document (ErrNotFound when
	// none of that name).
	ReadBackup(ctx context.Context, taskID, name string) ([]byte, error)
	// RestoreBackup puts a backup back as the task's state under the
	// task's lock, keeping the state it replaces as a new backup. name ""
	// picks the newest backup valid checks; a named backup valid refuses
	// is ErrInvalid. It returns the name restored.
	RestoreBackup(ctx context.Context, taskID, name string, valid func([]byte) error) (string, error)
}

// SkillStore adds and removes skills.
type SkillStore interface {
	AddSkill(ctx context.Context, req AddSkillRequest) (Skill, error)
	RemoveSkill(ctx context.Context, name, agent string) error
}
