package sqlite

import (
	"context"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

var _ workspace.CommitSource = (*Store)(nil)

// hubPoll is how often the commit hub wakes its waiters without a write
// heard: rarely, as they poll on their own as well (workspace.Wait).
const hubPoll = time.Hour

// Commits hears the commits of every process on the database
// (workspace.CommitSource), to any task: its channel receives once at the
// start and after each commit, as soon as it is visible (the loop of
// wakeups.go reads PRAGMA data_version after every write heard until it
// moves). One watch of the database serves every waiter of the store
// (s.hub): one inotify instance and one connection.
func (s *Store) Commits(ctx context.Context, _ string) (<-chan struct{}, error) {
	return s.hub.Subscribe(ctx, "", workspace.CommitListenFunc(func(lctx context.Context) (func(), error) {
		fw, err := s.watchFiles()
		if err != nil {
			return nil, err
		}
		return func() {
			defer fw.Close()
			s.loop(lctx, fw, hubPoll, false, func(error) { s.hub.Wake("") })
		}, nil
	}))
}
