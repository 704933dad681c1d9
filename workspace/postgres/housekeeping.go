package postgres

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/workspaced/workspaced/friction"
	"github.com/workspaced/workspaced/retention"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/machine"
)

// What the daemon does besides committing, as the file daemon does it:
// after each commit the friction detectors see its events; every rescan
// the subtasks in progress are checked for timeouts; every cleanup
// interval retention runs and the friction of removed tasks is
// anonymised. The detectors and the policy are the pure ones of packages
// friction and retention; the store only records what they decide.

// daemonAgent names the daemon in the friction log and in the lock
// holder records it leaves, as on files.
const daemonAgent = "workspaced-daemon"

// observe records the friction the events of a commit show.
func (s *Store) observe(ctx context.Context, log interface{ Warn(string, ...any) }, evs []workspace.Event) {
	if _, err := workspace.ObserveFriction(ctx, s, daemonAgent, evs, now()); err != nil && ctx.Err() == nil {
		log.Warn("record friction", "err", err)
	}
}

// checkTimeouts records friction for the subtasks in progress too long.
func (s *Store) checkTimeouts(ctx context.Context, log interface{ Warn(string, ...any) }) {
	items, err := s.inProgress(ctx)
	if err == nil {
		_, err = workspace.RecordTimeouts(ctx, s, daemonAgent, items, now())
	}
	if err != nil && ctx.Err() == nil {
		log.Warn("record timeout friction", "err", err)
	}
}

// inProgress lists the subtasks in progress of every task, with the
// complexity their plan estimates.
func (s *Store) inProgress(ctx context.Context) ([]friction.InProgress, error) {
	rows, err := s.pool.Query(ctx, `SELECT task_id, doc FROM states WHERE position('"`+machine.SubtaskInProgress+`"' in doc) > 0 ORDER BY task_id`)
	if err != nil {
		return nil, err
	}
	type row struct{ id, doc string }
	docs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		var x row
		err := r.Scan(&x.id, &x.doc)
		return x, err
	})
	if err != nil {
		return nil, err
	}
	var items []friction.InProgress
	for _, d := range docs {
		var st workspace.State
		if json.Unmarshal([]byte(d.doc), &st) != nil {
			continue
		}
		var plan *workspace.Plan
		for sid, sub := range st.Subtasks {
			if sub.Status != machine.SubtaskInProgress || sub.StartedAt == nil {
				continue
			}
			if plan == nil && st.PlanVersion > 0 {
				if p, err := s.ReadPlan(d.id, st.PlanVersion); err == nil && p.ID == st.PlanID {
					plan = p
				}
			}
			it := friction.InProgress{TaskID: d.id, SubtaskID: sid, StartedAt: *sub.StartedAt}
			if plan != nil {
				for _, ps := range plan.Subtasks {
					if ps.ID == sid {
						it.Complexity = ps.EstimatedComplexity
					}
				}
			}
			items = append(items, it)
		}
	}
	return items, nil
}

// cleanup runs retention by the workspace's policy and anonymises the
// removed tasks in the friction log. Another cleanup running (a cron
// `workspaced cleanup`) is left to finish: this one is skipped.
func (s *Store) cleanup(ctx context.Context, log interface {
	Warn(string, ...any)
	Info(string, ...any)
}) {
	p := retention.Policy{FullDays: s.settings.Retention.FullDays, SummaryDays: s.settings.Retention.SummaryDays}
	rep, err := s.Prune(ctx, workspace.PruneRequest{Policy: p, Agent: daemonAgent, DiscardDecisions: false})
	if err != nil {
		if ctx.Err() == nil {
			log.Warn("cleanup", "err", err)
		}
		return
	}
	var removed []string
	for _, r := range rep.Removed {
		removed = append(removed, r.TaskID)
	}
	if len(removed) > 0 {
		if _, err := s.Friction(daemonAgent).AnonymizeTasks(ctx, removed); err != nil {
			log.Warn("anonymise friction of removed tasks", "err", err)
		}
	}
	for _, e := range rep.Errors {
		log.Warn("cleanup", "err", e)
	}
	log.Info("cleanup done", "kept", rep.Counts.Kept, "summarized", rep.Counts.Summarized, "removed", rep.Counts.Removed, "skipped", rep.Counts.Skipped)
}

// every runs f every d until ctx ends (never when d is not positive).
func every(ctx context.Context, d time.Duration, f func()) {
	if d <= 0 {
		return
	}
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}
