package sqlstore

import (
	"context"
	"database/sql"
	"time"

	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/workspace"
)

// Executor runs statements: a database's pool or one of its
// transactions. Every query takes $1, $2… placeholders.
type Executor interface {
	// Exec runs a statement and says how many rows it changed.
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	// Query runs a query; the caller closes its rows.
	Query(ctx context.Context, query string, args ...any) (Rows, error)
	// QueryRow runs a query of one row; its Scan says ErrNoRows when
	// there is none.
	QueryRow(ctx context.Context, query string, args ...any) Row
}

// Rows are a query's result, read with Next and Scan.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Row is the result of QueryRow.
type Row interface {
	Scan(dest ...any) error
}

// ErrNoRows is what Row.Scan returns when the query found no row, on
// every driver (pgx's own wraps it).
var ErrNoRows = sql.ErrNoRows

// Driver is a database under the store: where reads go, how a write
// transaction runs, how its errors are told apart and how its SQL
// differs.
type Driver interface {
	// Reads is the executor of the reads that need no transaction.
	Reads() Executor
	// Read runs fn in one read transaction: one snapshot.
	Read(ctx context.Context, fn func(tx Executor) error) error
	// Write runs fn in one write transaction and commits it; the commit
	// is durable when Write returns. fn may run more than once (a
	// transaction the database refused as busy runs again) and must
	// only write through tx.
	Write(ctx context.Context, fn func(tx Executor) error) error
	// WriteOne runs one statement as a write of its own, durable when it
	// returns, and says how many rows it changed.
	WriteOne(ctx context.Context, query string, args ...any) (int64, error)
	// WriteTask is Write holding task: no other write of the task, the
	// daemon's commit among them, interleaves with it. A bad task id is
	// ErrInvalid, a missing task ErrNotFound (NotFoundTask).
	WriteTask(ctx context.Context, taskID string, fn func(tx Executor) error) error
	// IsUnique says err is a unique or primary key violation (or the
	// database's refusal of a marker name the journal holds).
	IsUnique(err error) bool
	// IsForeignKey says err is a foreign key violation.
	IsForeignKey(err error) bool
	// Dialect is how the database spells what differs.
	Dialect() Dialect

	// The data-level calls where the databases differ (a statement of
	// their own, a round trip saved, a lock of their own):

	// AppendEvents inserts events of a task, stamped (StampEvents), in
	// one write, in the order given; a missing task is ErrNotFound
	// (NotFoundTask).
	AppendEvents(ctx context.Context, taskID string, evs []workspace.Event) error
	// PutEntry stores an entry's row, created (version 1) or replaced
	// (version bumped, created_at kept), with its event (EntryEvent), in
	// one write; it returns created_at and the version. A missing task
	// is ErrNotFound (NotFoundTask).
	PutEntry(ctx context.Context, p EntryPut) (created time.Time, version int, err error)
	// PutMemory stores a memory item's row as workspace.ApplyPut judges
	// it, with its event (MemoryPut.EventLine), in one write; it returns
	// created_at and the version. A put its compare-and-set refuses is
	// workspace.PutConflict with the item's current version.
	PutMemory(ctx context.Context, p MemoryPut) (created time.Time, version int, err error)
	// PutMemories stores a batch of memory puts as PutMemory stores each,
	// in their order, in one transaction: one result per put; a put its
	// compare-and-set refuses is its result's Err (workspace.PutConflict
	// with the item's version then) and writes nothing. Any other error
	// writes nothing at all.
	PutMemories(ctx context.Context, ps []MemoryPut) ([]MemoryWritten, error)
	// RestoreState writes a restore in the transaction of
	// Store.RestoreBackup (PostgreSQL stamps the state with the lease's
	// epoch, in one round trip).
	RestoreState(ctx context.Context, tx Executor, r Restore) error
	// UpdateFriction runs change over the friction log's row (nil when
	// there is none) as one read-modify-write that no other writer
	// interleaves with, waiting at most timeout for the other writers
	// (then a *locking.TimeoutError); a change that returns nil data
	// writes nothing.
	UpdateFriction(ctx context.Context, agent string, timeout time.Duration, change func(old []byte) ([]byte, error)) error
	// LockTokens holds the tokens table in tx for holder, the first
	// statement of a change of the grants (SQLite's write transaction
	// holds it already); a writer that holds it past the lock timeout is
	// ErrLocked.
	LockTokens(ctx context.Context, tx Executor, holder string) error
	// Batch runs stmts in tx, each with args, in order (PostgreSQL sends
	// them in one round trip).
	Batch(ctx context.Context, tx Executor, stmts []string, args ...any) error
	// Lock takes the named lock of the workspace (task taskID's lock
	// named lock, when taskID is not "") as agent, waiting at most
	// timeout (zero: not at all); a held one is ErrLocked naming its
	// holder, ctx ending first its error.
	Lock(ctx context.Context, name, taskID, lock, agent string, timeout time.Duration) (workspace.Lock, error)
	// Held says whether the named lock is held now, and by whom.
	Held(ctx context.Context, name string) (bool, *locking.Holder, error)
}

// Dialect holds the fragments of SQL, and the representation of time,
// that differ between databases.
type Dialect struct {
	// Collate follows a text column in ORDER BY to order it by bytes,
	// as the file tree orders names (` COLLATE "C"` on PostgreSQL; SQLite
	// compares bytes already).
	Collate string
	// Now is the current time as a column stores it.
	Now string
	// Lock ends a SELECT in a write transaction to lock the rows it reads
	// in mode ("UPDATE", "NO KEY UPDATE", "KEY SHARE"): " FOR <mode>" on
	// PostgreSQL, "" on SQLite, whose write transaction holds the whole
	// database already.
	Lock func(mode string) string
	// HasPrefix is the condition that column col starts with the text
	// of placeholder param.
	HasPrefix func(col, param string) string
	// Time is t as a statement's argument for a time column.
	Time func(t time.Time) any
	// ScanTime is the destination a time column scans into t through.
	ScanTime func(t *time.Time) any
	// ScanNullTime is ScanTime for a column that may be NULL (the zero
	// time).
	ScanNullTime func(t *time.Time) any
	// EntryIntent is the statement that tells the entries' event trigger,
	// in a write transaction, the verb ($1, "" for the trigger's own:
	// "stored" makes an upsert's update a store), the agent ($2, who
	// deletes) and the token ($3, "" for none) of the next entry written.
	EntryIntent string
	// QuietEntries is the statement that silences (on) or restores the
	// entries' event trigger for the rest of a write transaction: an
	// import brings the events along, and retention's deletes are not an
	// agent's.
	QuietEntries func(on bool) string
	// EventsAfter is the condition on table, a table of events (events,
	// memory_events), selecting the rows a reader that has read up to
	// the row of id param reads next, in EventOrder: every row that
	// follows it and can no longer be preceded by one committed later.
	EventsAfter func(table, param string) string
	// EventOrder orders rows of events as readers read them.
	EventOrder string
	// StatePartsFrom is the number of entries (subtasks, checkpoints and
	// workers) from which a commit writes its state as parts
	// (CommitWrite.Parts) rather than as one document; 0: never. Below
	// it, a document of a few blocks costs less written whole than as
	// the statements of its parts.
	StatePartsFrom int
	// StateRows is the table of the states rows, which a write locks
	// (FOR UPDATE) where it cannot lock them through the states view.
	StateRows string
}
