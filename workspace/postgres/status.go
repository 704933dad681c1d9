package postgres

import (
	"context"

	"github.com/workspaced/workspaced/workspace"
)

var (
	_ workspace.StatusReader = (*Store)(nil)
	_ workspace.Rebuilder    = (*Store)(nil)
)

// ReadStatus reads the lease, every task's status and the markers waiting,
// in one read-only snapshot. It only reads.
func (s *Store) ReadStatus(ctx context.Context) (workspace.StoreStatus, error) {
	st := workspace.StoreStatus{ByStatus: map[string]int{}, Tasks: []workspace.StoreTaskStatus{}}
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
