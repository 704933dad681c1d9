// Package daemon is the single writer of a workspace: `workspaced serve`.
// It decides *when* each task is looked at, over any store that can be
// served (workspace.Served): the file tree, PostgreSQL, or another. The
// store decides *how* a task's markers are taken exactly once and made
// durable with the state, its backup and its events (its Committer); the
// state machine (workspace/machine) decides what each marker means. The
// daemon imports neither store.
//
// # Guarantees
//
//   - One writer per workspace: Run leads through the store (a flock of
//     the root's lock file, a lease row with an epoch) and serves only
//     while it leads; a second daemon fails at once naming the one
//     serving, or waits as a standby and takes over when it goes.
//   - Every marker is applied exactly once, whatever crashes when: that
//     is the store's commit (see its package), which the daemon calls for
//     one task from one goroutine at a time.
//   - No marker is left behind: every task the store lists is looked at
//     on start and at every rescan, and whenever the store's wake-up
//     source names it (or says it may have missed something).
//   - A task whose commit fails (a full disk, a read-only filesystem, a
//     database out of reach) is retried with backoff, from 100 ms to 2 s,
//     and status names it until it goes on; the other tasks go on.
//
// # The code
//
// One owner value per task (owner.go) holds everything the daemon knows
// of it, and the loop (loop.go) is the one goroutine that touches the
// owners: it notes wake-ups, hands woken tasks to commit (up to Parallel
// at once), and applies what each commit says (finished, gone, waiting,
// failed). settle.go runs the work a commit left for later; chores.go the
// friction detectors, the timeouts and retention; live.go the report
// status reads.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// Defaults for Config fields left zero (the store's settings come first).
const (
	// DefaultRescan is how often every task is looked at again.
	DefaultRescan = 30 * time.Second
	// DefaultCleanupInterval is how often retention runs.
	DefaultCleanupInterval = 24 * time.Hour
	// DefaultParallel is how many tasks are committed at once.
	DefaultParallel = 8
	// DefaultMax is the most markers of one task one commit takes: a
	// larger burst is committed in several, each writing the state once.
	DefaultMax = 128
	// DefaultSettle is how long after a commit the work it left is done
	// (see settle.go).
	DefaultSettle = time.Second
)

// Agent names the daemon in lock holder records and the friction log.
const Agent = "workspaced-daemon"

// Config configures a Daemon. Zero durations take the store's daemon
// settings, then the Default… constants; CleanupInterval < 0 turns
// cleanup off.
type Config struct {
	// Store is the workspace served.
	Store workspace.Served
	// Lead configures the leadership (standby, holder, lease, strict).
	Lead workspace.LeadOptions
	// Wake configures the store's wake-up source.
	Wake workspace.WakeOptions
	// Rescan is the period of the full rescan.
	Rescan time.Duration
	// CleanupInterval is the period of the retention run; < 0 is off.
	CleanupInterval time.Duration
	// Parallel bounds how many tasks are committed at once.
	Parallel int
	// Max is the most markers one commit takes.
	Max int
	// Logger receives structured logs (nil: discarded).
	Logger *slog.Logger
	// Now is the clock of deadlines (nil: time.Now).
	Now func() time.Time
	// Ready, if set, is called each time the daemon has begun to lead
	// and its start-up scan is done.
	Ready func()
	// Leading, if set, is called each time the daemon begins to lead,
	// with the leadership's epoch.
	Leading func(epoch int64)
	// Observer, if set, is told what the daemon does, for its metrics.
	Observer Observer
}

// Daemon is the single writer of one store. Create it with New and run
// it with Run; a Daemon runs once.
type Daemon struct {
	cfg  Config
	s    workspace.Served
	log  *slog.Logger
	now  func() time.Time
	live liveReport

	looping atomic.Bool        // a loop runs (ping.go)
	pings   chan chan struct{} // to the loop: are you alive?
}

// New fills the defaults of cfg. It takes no lock and starts nothing.
func New(cfg Config) (*Daemon, error) {
	if cfg.Store == nil {
		return nil, errors.New("daemon: no store to serve")
	}
	s := cfg.Store.Settings()
	cfg.Rescan = firstPositive(cfg.Rescan, time.Duration(s.Daemon.Rescan), DefaultRescan)
	if cfg.CleanupInterval == 0 {
		cfg.CleanupInterval = firstPositive(time.Duration(s.Daemon.CleanupInterval), DefaultCleanupInterval)
	}
	cfg.Parallel = int(firstPositive(time.Duration(cfg.Parallel), DefaultParallel))
	cfg.Max = int(firstPositive(time.Duration(cfg.Max), DefaultMax))
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Lead.Logger == nil {
		cfg.Lead.Logger = cfg.Logger
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Observer == nil {
		cfg.Observer = nopObserver{}
	}
	d := &Daemon{cfg: cfg, s: cfg.Store, log: cfg.Logger, now: cfg.Now, pings: make(chan chan struct{})}
	d.live.store(workspace.Live{Stopped: []workspace.StoppedTask{}})
	return d, nil
}

// firstPositive returns the first of ds that is positive.
func firstPositive(ds ...time.Duration) time.Duration {
	for _, d := range ds {
		if d > 0 {
			return d
		}
	}
	return 0
}

// Live is the daemon's latest report of itself (what status shows).
func (d *Daemon) Live() workspace.Live { return d.live.load() }

// Run serves the store until ctx is done, then returns nil. It fails at
// once when another daemon leads (unless Lead.Standby). Having lost the
// lead to another daemon, it returns the reason, or with Standby waits
// to lead again; a lease that lapsed (the store out of reach) is taken
// again once the store is back. One goroutine, the caller's, owns the
// loop.
func (d *Daemon) Run(ctx context.Context) error {
	opt := d.cfg.Lead
	for {
		lead, err := d.s.Lead(ctx, opt)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		d.log.Info("leading", "epoch", lead.Epoch())
		d.cfg.Observer.Leading(lead.Epoch())
		if d.cfg.Leading != nil {
			d.cfg.Leading(lead.Epoch())
		}
		err = d.serve(ctx, lead)
		d.cfg.Observer.Stepped()
		if ctx.Err() != nil {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			rerr := lead.Release(rctx)
			cancel()
			if rerr != nil {
				d.log.Warn("give up the lead", "err", rerr)
			}
			return nil
		}
		lost := errors.Is(err, workspace.ErrFenced) || errors.Is(err, workspace.ErrLeaseLapsed)
		if !lost {
			return err
		}
		d.log.Warn("stepped down", "epoch", lead.Epoch(), "why", err)
		// A lease that lapsed while the store was out of reach is taken
		// again once it is back, unless another daemon has it.
		opt.Retry = errors.Is(err, workspace.ErrLeaseLapsed)
		if !d.cfg.Lead.Standby && !opt.Retry {
			return fmt.Errorf("serve: %w", err)
		}
	}
}

// serve runs the loop while lead holds.
func (d *Daemon) serve(ctx context.Context, lead workspace.Leadership) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wk, err := d.s.Wakeups(ctx, d.cfg.Wake)
	if err != nil {
		return fmt.Errorf("start the wake-up source: %w", err)
	}
	defer wk.Close()
	if ls, ok := workspace.As[workspace.LiveServer](d.s); ok {
		c, err := ls.ServeLive(d.Live)
		if err != nil {
			d.log.Warn("no status socket: status will not show what the daemon is retrying", "err", err)
		} else {
			defer c.Close()
		}
	}
	l := newLoop(d, lead, wk)
	d.looping.Store(true)
	defer d.looping.Store(false)
	return l.run(ctx)
}
