package sqlstore

import (
	"context"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// What a commit asks of a driver: its transaction, what it reads first
// and what it writes.

// CommitTx is one commit's write transaction on a database.
type CommitTx interface {
	Executor
	// ReadCommit reads, in this order, the lease's epoch (0 where there
	// is none), the task (ErrNoRows when gone), its state row — its
	// document only when the row's version and epoch are not mine's
	// (mine.Version 0 is none) —, the journal records past the state
	// row's journal_seq and up to max markers waiting, each with whether
	// its name is journaled already.
	ReadCommit(ctx context.Context, taskID string, max int, mine Stamp) (CommitRead, error)
	// ReadProducts reads the products of the task at paths and at
	// planPaths, by path; a path absent is not in the maps.
	ReadProducts(ctx context.Context, taskID string, paths, planPaths []string) (products map[string][]byte, plans map[string]string, err error)
	// WriteCommit writes w: the journal rows, the previous state kept as
	// a backup (pruned to w.Keep), the new state, its events, and the
	// markers deleted.
	WriteCommit(ctx context.Context, w CommitWrite) error
	// DeleteMarkers deletes the markers ids of task taskID (passed over).
	DeleteMarkers(ctx context.Context, taskID string, ids []int64) error
}

// Stamp is what says which write a states row holds: its version, which
// every update raises (a commit by one, anything else by the trigger of
// the states_version migration), and the lease's epoch it was written
// under. A committer remembers the stamp it wrote; a row with that stamp
// holds the document it wrote, known without reading it.
type Stamp struct {
	Version, Epoch int64
}

// CommitRead is what a commit reads first.
type CommitRead struct {
	Epoch    int64 // the lease's
	HasState bool
	// Mine says the state row holds the stamp asked for: its document,
	// the committer's, is not read, and Prev is "".
	Mine        bool
	Prev        string // the state row's document
	PrevSeq     int64
	PrevVersion int64
	After       []string // journal records past the state row's journal_seq
	Markers     []Marker
}

// Marker is one marker row waiting.
type Marker struct {
	ID         int64
	Kind, Name string
	Body       string
	DroppedAt  time.Time
	Taken      bool // the journal holds its name already
}

// CommitWrite is what a commit writes.
type CommitWrite struct {
	TaskID  string
	Epoch   int64
	Now     time.Time
	Seqs    []int64  // the journal records', with their markers' names
	Names   []string // and their JSON
	Records []string
	// Verdicts: the verdict column of each record's row
	// (VerdictExcerpt).
	Verdicts []string
	// HasState: the state row is copied as a backup by the server (its
	// document is not sent again) and updated, else inserted.
	HasState bool
	Keep     int // backups kept
	Seq      int64
	Version  int64 // the row's version once written
	// Doc is the new state. Its bytes are the encoder's and change at
	// the committer's next commit: a driver sends it within WriteCommit
	// and keeps no reference to it.
	Doc string
	// Parts is the new state as parts instead of Doc, on a driver that
	// stores the state so (Dialect.StatePartsFrom): in order, those with an ID
	// held by the previous row already, the others to insert, their ID
	// set by the driver once inserted.
	Parts []StatePart
	// Follows says the previous row is the committer's own: Replaced are
	// the ids of its parts the new row does not hold. Otherwise every
	// part of the task that no row replaced yet is replaced by the new
	// row. On a driver that stores parts, for a state written whole
	// (Parts nil) too.
	Follows  bool
	Replaced []int64
	Events   []workspace.Event
	Delete   []int64 // the markers taken and those passed over
}
