package sqlite

import (
	"context"
	"slices"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

var _ workspace.Watcher = (*Store)(nil)

// watchPoll is how often a watch looks without a write heard.
const watchPoll = 2 * time.Second

// Watch reports what changes in the workspace (workspace.Watcher). It
// watches the database's files as the daemon's wake-ups do (wakeups.go):
// after every write heard (a burst coalesced) and every watchPoll, it
// reads the last event id of each task, and reports the tasks whose
// events grew, and Memory or Friction when memory entries or the friction
// log moved. The first report, once the watch is in place, is Everything.
// It returns nil when ctx ends.
func (s *Store) Watch(ctx context.Context, each func(workspace.Change)) error {
	fw, err := s.watchFiles()
	if err != nil {
		return err
	}
	defer fw.Close()
	var (
		last             map[string]int64
		memory, friction string
		started          bool
	)
	s.loop(ctx, fw, watchPoll, false, func(trouble error) {
		tops, m, f, err := s.marks(ctx)
		if ctx.Err() != nil {
			return
		}
		if trouble == nil && err != nil {
			trouble = err
		}
		if !started || trouble != nil {
			if err == nil {
				started, last, memory, friction = true, tops, m, f
			}
			each(workspace.Change{Everything: true, Err: trouble})
			return
		}
		if err != nil {
			return
		}
		c := workspace.Change{Memory: m != memory, Friction: f != friction}
		for id, top := range tops {
			if top != last[id] {
				c.Tasks = append(c.Tasks, id)
			}
		}
		last, memory, friction = tops, m, f
		if len(c.Tasks) > 0 || c.Memory || c.Friction {
			slices.Sort(c.Tasks)
			each(c)
		}
	})
	return nil
}

// marks reads, in one snapshot, the last event id of every task and what
// tells that memory or the friction log changed.
func (s *Store) marks(ctx context.Context) (map[string]int64, string, string, error) {
	tops := map[string]int64{}
	var memory, friction string
	err := s.read(ctx, func(tx wtx) error {
		rows, err := tx.QueryContext(ctx, "SELECT task_id, max(id) FROM events GROUP BY task_id")
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			var top int64
			if err := rows.Scan(&id, &top); err != nil {
				return err
			}
			tops[id] = top
		}
		if err := rows.Err(); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT
			(SELECT count(*) || '/' || coalesce(max(updated_at), '') || '/' || coalesce(sum(version), 0)
				FROM entries WHERE scope IN ($1, $2))
				|| '/' || (SELECT coalesce(max(id), 0) FROM memory_events),
			coalesce((SELECT updated_at || '/' || length(body) FROM files WHERE path = $3), '')`,
			string(workspace.ScopeAgent), string(workspace.ScopeGlobal), frictionPath).Scan(&memory, &friction)
	})
	return tops, memory, friction, err
}
