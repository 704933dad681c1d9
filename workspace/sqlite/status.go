package sqlite

import (
	"context"
	"fmt"
	"io"

	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/livesocket"
)

var (
	_ workspace.StatusReader = (*Store)(nil)
	_ workspace.Rebuilder    = (*Store)(nil)
	_ workspace.LiveServer   = (*Store)(nil)
)

// ReadStatus reports whether a daemon holds the daemon's lock (probed
// without taking it), every task's status and the markers waiting, read
// in one snapshot, and the serving daemon's own report (the tasks it is
// retrying and why) when it answers, and the read-only fault of the
// database's filesystem when it has one (Fault). It only reads (the
// fault is told by trying to create a file beside the database).
func (s *Store) ReadStatus(ctx context.Context) (workspace.StoreStatus, error) {
	st := workspace.StoreStatus{Root: "sqlite:" + s.path, ByStatus: map[string]int{}, Tasks: []workspace.StoreTaskStatus{}}
	held, h, err := locking.Held(s.leadFile())
	if err != nil {
		return st, fmt.Errorf("probe the daemon's lock: %w", err)
	}
	st.Serving = held
	if held && h != nil {
		since := h.Since.UTC()
		st.PID, st.Since, st.Holder = h.PID, &since, h.Agent
	}
	if err := s.TaskStatuses(ctx, &st); err != nil {
		return st, err
	}
	if f := s.readOnlyFault(); f != nil {
		st.Fault = &workspace.StoreFault{Kind: workspace.FaultKind(f), Error: f.Error(), Hint: workspace.FaultHint(f)}
	}
	if held {
		if l, err := livesocket.Read(s.path); err == nil {
			st.Live = &l
		}
	}
	return st, nil
}

// ServeLive answers status with report() until the returned Closer is
// closed (workspace.LiveServer), on the socket the file tree's daemon
// uses, named after the database file: only the process holding the
// daemon's lock serves, so only one answers.
func (s *Store) ServeLive(report func() workspace.Live) (io.Closer, error) {
	return livesocket.Serve(s.path, report)
}
