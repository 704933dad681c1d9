package workspace

import (
	"context"
	"io"
	"time"
)

// The optional capabilities of a store, declared together. The Store
// contract is what every consumer may count on; a capability is more that
// some stores offer, named here so that a caller asks for it by name
// (As) instead of by a store's concrete type, and knows what to do when
// the store does not have it. Each says which stores have it.
//
// A store that wraps another (a counting or logging layer, the
// conformance suite's) implements Unwrapper, and As looks through it.

// Unwrapper is a store that wraps another: Unwrap returns the store it
// wraps, which may have capabilities the wrapper does not repeat.
type Unwrapper interface {
	Unwrap() Store
}

// As reports whether v — a store, or any value a capability is asked of
// (a VerdictSource) — has the capability T, and returns it as T: v itself
// when it has T, else the first store down its chain of Unwrap calls that
// does. It never type-switches on a concrete store; a wrapper that means
// to hide a capability of what it wraps must not implement Unwrapper.
func As[T any](v any) (T, bool) {
	for v != nil {
		if c, ok := v.(T); ok {
			return c, true
		}
		u, ok := v.(Unwrapper)
		if !ok {
			break
		}
		next := u.Unwrap()
		if next == nil {
			break
		}
		v = next
	}
	var zero T
	return zero, false
}

// Served is a Store that the daemon (workspaced serve) can be the single
// writer of. The daemon decides when a task is looked at; the store
// decides how its markers are taken exactly once and how the state, its
// backup and its events are made durable together; the state machine
// (workspace/machine) decides what each marker means. A new backend is
// two steps: implement Served, and pass workspace/storetest, which serves
// the store with the real daemon.
//
// Every store is one: the file tree, SQLite and PostgreSQL. Without it
// `workspaced serve` refuses the store (nothing could apply its markers).
type Served interface {
	Store
	// Lead makes this process the store's single writer, or fails with
	// ErrLocked naming the one that is (with opt.Standby it waits for
	// the leader to go instead). The files hold a flock of the root's
	// lock file; a database a lease row with an epoch.
	Lead(ctx context.Context, opt LeadOptions) (Leadership, error)
	// Wakeups starts the store's wake-up source: what tells the daemon a
	// task may have markers waiting (an inotify or poll watch of the
	// task directories, a database's notifications and a poll).
	Wakeups(ctx context.Context, opt WakeOptions) (Wakeups, error)
	// Tasks lists the tasks the single writer serves, sorted: every task
	// with markers waiting or no state yet, and every unfinished one
	// (a store that cannot tell cheaply lists them all). The daemon looks
	// at each on start and at every rescan.
	Tasks(ctx context.Context) ([]string, error)
	// Committer is the single writer's handle on one task. The daemon
	// keeps one per task it serves and never calls it from two
	// goroutines at once; the handle may cache what its commits wrote.
	Committer(taskID string) Committer
}

// LiveServer is a Served store that can give a running daemon's report to
// other processes (status): the file tree answers on a socket named after
// its root; SQLite the same beside its database file. PostgreSQL has
// none: without it the daemon runs without a status socket and status
// reads only what the store holds.
type LiveServer interface {
	// ServeLive answers with report() until the returned Closer is
	// closed.
	ServeLive(report func() Live) (io.Closer, error)
}

// Watcher is a Store that tells when something changed: the file tree
// watches its directories, a database its notifications. It is optional;
// a live view needs it. Every store has one (the tree: inotify or a
// poll; SQLite: a watch of its files; PostgreSQL: LISTEN/NOTIFY); the
// panel refuses a store without it, since its pages would not be live.
type Watcher interface {
	// Watch calls each with what changed until ctx ends (then it returns
	// nil) or the watch cannot go on. The first call, once the watch is
	// in place, is Everything: whatever changes after it is reported.
	// Calls come one at a time from one goroutine; what changes while
	// each runs is coalesced into the next call.
	Watch(ctx context.Context, each func(Change)) error
}

// VerdictSource is where the verdict on a marker is read: the file tree
// (its marker files, journal and state.json) or a store that keeps
// markers and the journal otherwise. Every store is one (the tree,
// SQLite, PostgreSQL); without it a command cannot wait for a verdict and
// says so.
type VerdictSource interface {
	// ReadVerdict says where the marker name stands (MarkerWaiting,
	// MarkerTaken, MarkerDecided, MarkerMissing) and, once decided, its
	// verdict. after is a journal seq the marker's record is known to
	// follow (the state's journal_seq when it was dropped; 0 when
	// unknown): only records past it are read. A marker refused because
	// its name was journaled already is decided: refused, with
	// Verdict.Journaled (machine.JudgeReused), never missing.
	ReadVerdict(taskID, name string, after int64) (Verdict, string, error)
	// Serving reports whether a daemon serves the workspace now.
	Serving() (bool, error)
	// Where names the workspace in messages.
	Where() string
}

// A CommitSource is a VerdictSource that hears the workspace's commits:
// Wait then looks at the verdict as soon as a commit is heard, not only
// on its poll. Every store is one (the tree through inotify, SQLite
// through a watch of its write-ahead log, PostgreSQL through
// LISTEN/NOTIFY); without it Wait polls.
type CommitSource interface {
	// Commits returns a channel that receives (coalesced: one value
	// waits at most) after each commit to task heard (a store may also
	// send for commits to other tasks), from the moment it returns until
	// ctx ends, and once at the start.
	Commits(ctx context.Context, task string) (<-chan struct{}, error)
}

// StatusReader is a store kept in a database that reports its status
// itself (SQLite, PostgreSQL). ReadStatus only reads, in one snapshot.
// The tree has none: status reads its files and asks its daemon.
type StatusReader interface {
	ReadStatus(ctx context.Context) (StoreStatus, error)
}

// Rebuilder is a store kept in a database that derives a task's state
// again from the task and its journal alone, folding the records with the
// state machine and the plan loader its commit uses. Rebuild writes
// nothing and reads the journal in one snapshot; for a journal the daemon
// wrote, the result equals the state it wrote after the last record. A
// missing task is ErrNotFound. SQLite and PostgreSQL have it; the tree
// rebuilds through its own journal files (`workspaced state rebuild`).
type Rebuilder interface {
	Rebuild(taskID string) (State, error)
}

// ThreadsReporter is a store that can say which of a task's threads it
// could not read: the file tree, where a thread file may be broken. The
// databases check a thread on write, so they have none: the context then
// lists the threads ListThreads gives and omits nothing for them.
type ThreadsReporter interface {
	// ThreadsReport lists a task's threads as ListThreads does, and each
	// that could not be read as an Omission.
	ThreadsReport(ctx context.Context, taskID string) ([]Thread, []Omission, error)
}

// Omission is an item left out and why: over budget, not found, or
// refused (outside the task, a symlink, a FIFO, too large, not text).
type Omission struct {
	Item   string `json:"item"`
	Reason string `json:"reason"`
}

// ServingReporter is a store that can say whether a daemon serves it now:
// every store (the tree probes its lock, SQLite its lock file, PostgreSQL
// its lease). Every VerdictSource is one. Without it the panel shows the
// daemon's state as unknown.
type ServingReporter interface {
	Serving() (bool, error)
}

// DaemonLocker is a store whose daemon holds a flock of a file other than
// the tree's .workspaced.lock: SQLite's PATH.lock. DaemonLock names that
// file. The tree's lock is named by the tree itself; PostgreSQL leads by
// lease and has no lock file, so a caller without one names none.
type DaemonLocker interface {
	DaemonLock() string
}

// Pinger is a store that can say whether it answers: PostgreSQL pings its
// pool. Without it a readiness check counts the store as answering
// (the tree and a SQLite file are opened and read in place).
type Pinger interface {
	Ping(ctx context.Context) error
}

// MarkerCounter is a store that can count the markers waiting cheaply:
// PostgreSQL, with one count of its markers table. Without it the metrics
// leave the gauge of markers waiting out.
type MarkerCounter interface {
	MarkersWaiting(ctx context.Context) (int64, error)
}

// NamedMarkers is a store on which a marker can be dropped under a name
// of the caller's choosing, as an agent in any language does (the name
// is part of the protocol: a name used twice is refused). Every store has
// it; the conformance suite reuses a name with it and fails a store
// without it.
type NamedMarkers interface {
	DropNamedMarker(ctx context.Context, taskID, kind, name string, m Marker) error
}

// MemoryStore is a store that keeps long-term memory items under
// namespaces of labels (workspace/memory.go has the rules every store
// shares). Every store has it: the tree keeps a directory per namespace
// under memory/namespaces/, SQLite and PostgreSQL the memory_items table.
// Without it a door says namespaced memory is not kept there.
//
// Every write is atomic and ordered per item: concurrent puts of one item
// each bump the version once and none is lost; IfVersion and IfAbsent
// are checked and the item written under one lock (a transaction). An
// item past its expiry is invisible to every read at once and counts as
// absent for a put; a retention run (Prune) removes it.
type MemoryStore interface {
	// PutMemory creates or replaces an item (version 1, then one more per
	// put, created_at kept) and appends its memory_stored event; a
	// refused compare-and-set is ErrConflict with a *VersionError.
	PutMemory(ctx context.Context, req MemoryPutRequest) (MemoryItem, error)
	// GetMemory reads one live item (ErrNotFound when none).
	GetMemory(ctx context.Context, ns Namespace, key string) (MemoryItem, error)
	// DeleteMemory removes a live item and appends its memory_deleted
	// event; a missing item is ErrNotFound, a version that does not match
	// ErrConflict with a *VersionError.
	DeleteMemory(ctx context.Context, req MemoryDeleteRequest) error
	// SearchMemory lists live items under a prefix that the filter
	// matches, sorted by namespace then key, one page of them.
	SearchMemory(ctx context.Context, req MemorySearchRequest) ([]MemoryItem, error)
	// ListMemoryNamespaces lists the namespaces that hold live items, as
	// ListNamespaces does.
	ListMemoryNamespaces(ctx context.Context, q NamespaceQuery) ([]Namespace, error)
	// ReadMemoryEvents calls each for every memory event after position
	// pos, oldest first, and returns the position to read from next, as
	// ReadEventsFrom does for a task's events: the memory events are a
	// feed of the workspace's own, beside the tasks'.
	ReadMemoryEvents(ctx context.Context, pos int64, each func(PositionedEvent)) (int64, error)
	// PruneMemory removes the items expired at now (none when dryRun) and
	// says how many there are.
	PruneMemory(ctx context.Context, now time.Time, dryRun bool) (int, error)
}

// MemoryBatchStore is a MemoryStore that writes a batch of puts in one
// write: SQLite in one write transaction, PostgreSQL in one round trip
// run as one transaction, so one commit for the lot. The tree has none:
// PutMemoryItems puts the batch one by one there, each its own write.
type MemoryBatchStore interface {
	// PutMemoryItems checks every put (CheckMemoryPuts: a refused one
	// refuses the call, naming puts[i], with nothing written), then
	// applies the puts in their order in one transaction, each as
	// PutMemory would: two puts of one item make two versions, each
	// written put appends its memory_stored event, in order, attributed
	// as a single put's is. It returns one result per put, in order; a
	// put its compare-and-set refuses is its result's Err and does not
	// stop the others. Any other error is the call's, and then nothing
	// was written.
	PutMemoryItems(ctx context.Context, reqs []MemoryPutRequest) ([]MemoryPutResult, error)
}

// GrantGuarding is a store whose operations named Guarded… check the
// grant guard of their context (WithGrantGuard) in their own statement:
// they write or return data only if the token's row still holds the text
// the guard names, and are refused with ErrGrantChanged otherwise, with
// nothing written and nothing read handed back. A door that admits
// agents by their tokens may then admit a request for such an operation
// on the grant a look-up read before, saving the look-up's round trip;
// every other operation looks the token up. PostgreSQL has it, for the
// memory item's get, put and batch. The tree and SQLite have none: their
// look-up is local and cheap.
type GrantGuarding interface {
	// GuardsGrant reports whether the operation op (GuardedMemoryGet…)
	// checks the grant guard of its context.
	GuardsGrant(op string) bool
}

// The operations a GrantGuarding store may check a grant guard in.
const (
	// GuardedMemoryGet is MemoryStore.GetMemory.
	GuardedMemoryGet = "memory get"
	// GuardedMemoryPut is MemoryStore.PutMemory.
	GuardedMemoryPut = "memory put"
	// GuardedMemoryBatch is MemoryBatchStore.PutMemoryItems.
	GuardedMemoryBatch = "memory batch"
)

// EntryHistory is a store that keeps the earlier versions of memory
// entries (the global memory's and each agent's) as products keep
// theirs: a write that replaces one, and a delete that removes it, first
// keep the version it replaces, with its author, times and value, so an
// overwrite by another agent leaves the earlier author and value
// readable. Every store has it: the tree keeps them under .history/ of
// the scope's directory, SQLite and PostgreSQL in entry_history (a
// trigger, so writes made with SQL keep theirs too).
type EntryHistory interface {
	// EntryHistory lists the kept versions of key in memory scope s,
	// oldest first (none: an empty list); the live entry is not among
	// them. A scope other than the global or an agent's memory is
	// ErrInvalid.
	EntryHistory(ctx context.Context, s Scope, key string) ([]Entry, error)
}

// KeepsHistory says whether writes in scope s keep the versions they
// replace (EntryHistory): the global memory and an agent's.
func KeepsHistory(s Scope) bool { return s.Kind == ScopeGlobal || s.Kind == ScopeAgent }

// CheckHistoryScope refuses a history asked of a scope that keeps none.
func CheckHistoryScope(s Scope) error {
	if KeepsHistory(s) {
		return nil
	}
	return Invalidf("history of "+s.Label(), "ask the history of the global memory or an agent's memory", "only memory entries keep their history")
}
