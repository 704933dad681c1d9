// Package files is the workspace Store over a directory tree: JSON files
// written atomically under flock, markers as files, the daemon's journal,
// state.json and its backups beside them (the layout docs/PROTOCOL.md
// describes), and the tree's side of the single writer
// (workspace.Served): its lock, its wake-ups, its commit and recovery.
//
// # The single writer on a tree
//
//   - One daemon per root: Lead holds an exclusive flock on
//     <root>/.workspaced.lock for the daemon's whole life; a second fails
//     at once with a *ServingError naming the pid serving.
//   - Every marker is applied exactly once, whatever crashes when: taking a
//     marker is one rename into journal/ under a name that carries its
//     sequence number (see journal.go); the records of the markers taken
//     together are then written in one file and made durable, and
//     state.json records the last sequence it reflects. A load brings a
//     task up to date from its journal; a record that cannot be read or
//     written holds its task back until it can, so no marker is skipped.
//     (Durability across power loss assumes a local filesystem that
//     honours fsync and journals a rename atomically: ext4, xfs, btrfs.)
//   - state.json is only ever replaced atomically (temporary file, fsync,
//     rename, directory fsync), validated against its schema first, and the
//     previous version is kept in backups/ (hard-linked) before each write;
//     backups/ is pruned and fsynced when the burst settles. A state.json
//     that does not parse or validate is replaced by the newest valid
//     backup plus the journal past it (or by a replay of the whole journal
//     when no backup is valid), with a state_restored event.
//   - A burst of markers of one task is applied in one state write per
//     commit (group commit), in the order they were dropped: it is
//     journaled in chunks of up to 32 markers, one fsync of the journal
//     each, while the next chunk is read and examined (see take.go).
//   - A bad agent file never stops the daemon: a marker that is not a
//     regular file, is oversized or too deeply nested, or names a product
//     that is missing, unsafe, outside its task or schema-invalid, is
//     journaled as rejected with its reason (after the grace period when it
//     may still be being written) and the state records the error.
//
// A marker's way: the wake-up source (wake.go) names its task; the
// daemon hands the task's committer (committer.go) a commit, which loads
// the state (recover.go), takes the markers into the journal (take.go,
// judging each with marker.go through workspace/machine) and commits them
// (commit.go); the settle work it hands back (settle.go) makes the journal
// durable a moment later.
//
// The rest of the tree is Store's too: entries in every scope (entries.go),
// tasks, threads and their file buffers, plans, outputs and reviews with
// their history (products.go, keep.go), skills, agent cards, locks
// (lock.go), backups and retention (store_files.go), events.log
// (events.go, eventlog.go: its one writer), the merged event stream, and
// what validate reports as skipped (skipped.go, taskdir.go). Every
// agent-written file is read through workspace/files/agentfile. Callers
// that need what only a tree can do (paths, a flock held for a child
// process, the root's os.Root) say so by asking for a *Store.
package files

import (
	"context"
	"os"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// Store is an open workspace tree as a workspace.Store. It is safe for
// concurrent use by many goroutines, and any number of processes (in any
// language) may use the same tree at once: every read-modify-write happens
// under a flock on a sidecar lock file, every write is atomic and durable,
// and every path is opened through an os.Root so nothing is read or
// written outside the root.
type Store struct {
	root     *os.Root
	dir      string // absolute path of the root
	settings workspace.Settings
	now      func() time.Time

	serve ServeOptions        // the single writer's options (lead.go)
	hub   workspace.CommitHub // the watch shared by Commits (commits.go)
}

var _ workspace.Store = (*Store)(nil)

// ReadJournal reads task taskID's journal/ records in sequence order.
func (s *Store) ReadJournal(ctx context.Context, taskID string) ([]workspace.JournalRecord, error) {
	return journalRecords(s, taskID)
}
