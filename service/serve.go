package service

import (
	"context"

	"time"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files"
	"github.com/workspaced/workspaced/workspace/postgres"
	"github.com/workspaced/workspaced/workspace/sqlite"
)

// Serve is st as a daemon serves it, with the wake-ups its kind takes: a
// tree's by mode (inotify or poll, "" for the default) and every poll
// interval; a SQLite database's a watch of its files and the poll;
// PostgreSQL's notifications and a poll of its own. A store that cannot
// be served is refused.
func Serve(st workspace.Store, mode string, poll time.Duration) (workspace.Served, workspace.WakeOptions, error) {
	served, ok := workspace.As[workspace.Served](st)
	if !ok {
		return nil, workspace.WakeOptions{}, &workspace.Error{Kind: workspace.ErrInvalid, Op: "serve", Msg: "this workspace cannot be served by a daemon"}
	}
	switch st.(type) {
	case *postgres.Store:
		return served, workspace.WakeOptions{}, nil
	case *sqlite.Store:
		return served, workspace.WakeOptions{Interval: poll}, nil
	}
	return served, workspace.WakeOptions{Mode: mode, Interval: poll}, nil
}

// ServingError is the refusal of a second daemon on a root one serves
// already: it names the pid serving.
type ServingError = files.ServingError

// ErrUnsafeFilesystem is a tree on a filesystem that does not keep what
// the daemon needs (a network filesystem), refused under --strict.
var ErrUnsafeFilesystem = files.ErrUnsafeFilesystem

// TreeStatus is the status of a file tree: whether a daemon serves it,
// its tasks and the markers waiting.
type TreeStatus = files.Status

// TaskStatus is one task's row in a TreeStatus.
type TaskStatus = files.TaskStatus

// ReadTreeStatus reads the status of the tree w.
func ReadTreeStatus(ctx context.Context, w *files.Store) (TreeStatus, error) {
	return files.ReadStatus(ctx, w)
}

// ReadLive asks the daemon serving the tree at root for its own report.
func ReadLive(root string) (workspace.Live, error) { return files.ReadLive(root) }
