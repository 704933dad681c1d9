package postgres

import (
	"context"

	"github.com/workspaced/workspaced/workspace"
)

// Status is what 'workspaced status' reports of a workspace kept in
// PostgreSQL: the lease (which daemon serves, its epoch, until when), the
// tasks by status and the markers waiting.
type Status = workspace.StoreStatus

// TaskStatus is one task's line in Status.
type TaskStatus = workspace.StoreTaskStatus

var (
	_ workspace.StatusReader = (*Store)(nil)
	_ workspace.Rebuilder    = (*Store)(nil)
)

// ReadStatus reads the lease, every task's status and the markers waiting,
// in one read-only snapshot. It only reads.
func (s *Store) ReadStatus(ctx context.Context) (Status, error) {
	st := Status{ByStatus: map[string]int{}, Tasks: []TaskStatus{}}
	li, err := s.Lease(ctx)
	if err != nil {
		return st, err
	}
	st.Serving, st.Holder, st.Epoch = li.Live, li.Holder, li.Epoch
	if !li.ExpiresAt.IsZero() {
		at := li.ExpiresAt.UTC()
		st.ExpiresAt = &at
	}
	if err := s.TaskStatuses(ctx, &st); err != nil {
		return st, err
	}
	return st, nil
}
