package daemon

import (
	"context"
	"sync"
	"time"

	"github.com/workspaced/workspaced/friction"
	"github.com/workspaced/workspaced/retention"
	"github.com/workspaced/workspaced/workspace"
)

// What the daemon does besides committing, the same on every store: after
// each commit the friction detectors see its events; every rescan the
// subtasks in progress are checked for timeouts; every cleanup interval
// retention runs and the friction of removed tasks is anonymised. The
// detectors and the policy are the pure ones of packages friction and
// retention; the store only records what they decide.

// chores runs the timeouts and cleanup beside the loop, one of each at a
// time.
type chores struct {
	wg       sync.WaitGroup
	mu       sync.Mutex
	cleaning bool
	timing   bool
}

func (c *chores) wait() { c.wg.Wait() }

// timeouts records friction for the subtasks in progress too long.
func (c *chores) timeouts(ctx context.Context, d *Daemon, items []workspace.InProgress) {
	if !c.begin(&c.timing) {
		return
	}
	c.wg.Go(func() {
		defer c.end(&c.timing)
		entries, err := friction.RecordTimeouts(ctx, d.s, Agent, items, stamp(d))
		if err != nil && ctx.Err() == nil {
			d.log.Warn("record timeout friction", "err", err)
		}
		d.cfg.Observer.Friction(entries)
	})
}

// cleanup runs retention by the store's policy and anonymises the removed
// tasks in the friction log.
func (c *chores) cleanup(ctx context.Context, d *Daemon) {
	if !c.begin(&c.cleaning) {
		return
	}
	c.wg.Go(func() {
		defer c.end(&c.cleaning)
		set := d.s.Settings()
		rep, err := d.s.Prune(ctx, workspace.PruneRequest{Agent: Agent,
			Policy: retention.Policy{FullDays: set.Retention.FullDays, SummaryDays: set.Retention.SummaryDays, HistoryKeep: set.Retention.HistoryKeep}})
		if err != nil {
			if ctx.Err() == nil {
				d.log.Error("cleanup", "err", err)
				d.cfg.Observer.Cleaned(0, err)
			}
			return
		}
		d.cfg.Observer.Cleaned(len(rep.Removed), nil)
		var removed []string
		for _, r := range rep.Removed {
			removed = append(removed, r.TaskID)
		}
		if len(removed) > 0 {
			if _, err := friction.Open(d.s, Agent).AnonymizeTasks(ctx, removed); err != nil {
				d.log.Warn("anonymise friction of removed tasks", "err", err)
			}
		}
		for _, e := range rep.Errors {
			d.log.Warn("cleanup", "err", e)
		}
		d.log.Info("cleanup done", "kept", rep.Counts.Kept, "summarized", rep.Counts.Summarized, "removed", rep.Counts.Removed, "skipped", rep.Counts.Skipped, "memory_expired", rep.MemoryExpired, "history_pruned", rep.HistoryPruned)
	})
}

func (c *chores) begin(flag *bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if *flag {
		return false
	}
	*flag = true
	return true
}

func (c *chores) end(flag *bool) {
	c.mu.Lock()
	*flag = false
	c.mu.Unlock()
}

// observe shows the events of a commit to the friction detectors and
// records what they find.
func observe(ctx context.Context, d *Daemon, evs []workspace.Event) {
	entries, err := friction.ObserveEvents(ctx, d.s, Agent, evs, stamp(d))
	if err != nil && ctx.Err() == nil {
		d.log.Warn("record friction", "err", err)
	}
	d.cfg.Observer.Friction(entries)
}

// stamp is the daemon's clock to the millisecond.
func stamp(d *Daemon) time.Time { return d.now().UTC().Truncate(time.Millisecond) }
