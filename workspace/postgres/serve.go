package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/workspaced/workspaced/workspace"
)

// Serving a workspace on PostgreSQL: the daemon (workspace/daemon) leads
// through the lease row (lease.go), wakes on the markers channel and a
// poll (wake.go), and commits each task in one fenced transaction
// (commit.go). This file is the leadership: taking the lease, or waiting
// for it as a standby, and renewing it while leading.

// ErrFenced says this daemon's lease epoch is no longer the current one:
// another daemon took over, and this one must not write.
var ErrFenced = workspace.ErrFenced

// Lead takes the lease for this process (workspace.Served): with
// opt.Standby it waits while another daemon holds it, else it fails with
// ErrLocked naming the holder (after looking again for a moment: a daemon
// restarted right after its predecessor was killed may find the
// predecessor's session still being torn down). opt.Retry keeps trying
// while the database is out of reach. The lease is renewed every third of
// its TTL until Release, or until it is lost: fenced by another daemon,
// or not renewed for longer than it runs.
func (s *Store) Lead(ctx context.Context, opt workspace.LeadOptions) (workspace.Leadership, error) {
	if opt.Holder == "" {
		host, _ := os.Hostname()
		opt.Holder = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
	if opt.TTL <= 0 {
		opt.TTL = DefaultLeaseTTL
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.Standby {
		opt.Logger.Info("standby: waiting for the lease", "schema", s.schema)
	}
	p := &presence{s: s}
	epoch, err := s.waitLease(ctx, opt, p)
	if err != nil {
		p.close()
		return nil, err
	}
	opt.Logger.Info("took the lease", "epoch", epoch, "holder", opt.Holder, "schema", s.schema)
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	l := &leaseLead{s: s, epoch: epoch, done: make(chan struct{}), cancel: cancel, p: p}
	l.wg.Go(func() { l.renew(rctx, opt) })
	return l, nil
}

// waitLease takes the lease, waiting for it as a standby.
func (s *Store) waitLease(ctx context.Context, opt workspace.LeadOptions, p *presence) (int64, error) {
	tick := opt.TTL / 5
	giveUp := time.Now().Add(time.Second)
	for {
		var (
			epoch int64
			li    LeaseInfo
			ok    bool
		)
		conn, err := p.get(ctx)
		if err == nil {
			epoch, li, ok, err = s.Acquire(ctx, conn, opt.Holder, opt.TTL)
			if err != nil {
				p.close()
			}
		}
		switch {
		case ok:
			return epoch, nil
		case err != nil && !opt.Standby && !opt.Retry:
			return 0, err
		case err != nil:
			opt.Logger.Warn("take the lease", "err", err)
		case !opt.Standby && time.Now().Before(giveUp):
			tick = 100 * time.Millisecond
		case !opt.Standby:
			return 0, &workspace.Error{Kind: workspace.ErrLocked, Op: "serve",
				Msg:  fmt.Sprintf("another daemon serves this workspace: %s (epoch %d, lease until %s)", li.Holder, li.Epoch, li.ExpiresAt.UTC().Format(time.RFC3339)),
				Hint: "stop it first, or run this one as its standby with serve --standby"}
		case opt.Waiting != nil:
			opt.Waiting() // another leads: this one stands by
			opt.Waiting = nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(tick):
		}
	}
}

// leaseLead is a leadership held by the lease row (workspace.Leadership).
type leaseLead struct {
	s      *Store
	epoch  int64
	done   chan struct{}
	err    error // why it ended; set before done is closed
	once   sync.Once
	cancel context.CancelFunc
	wg     sync.WaitGroup
	p      *presence
}

func (l *leaseLead) Epoch() int64          { return l.epoch }
func (l *leaseLead) Done() <-chan struct{} { return l.done }
func (l *leaseLead) Err() error {
	select {
	case <-l.done:
		return l.err
	default:
		return nil
	}
}

// lose ends the leadership with err.
func (l *leaseLead) lose(err error) {
	l.once.Do(func() {
		l.err = err
		close(l.done)
	})
}

// Release stops renewing and gives the lease up, so a standby takes over
// at once; it does nothing more when the epoch is no longer the lease's.
func (l *leaseLead) Release(ctx context.Context) error {
	if l.cancel != nil {
		l.cancel()
	}
	l.wg.Wait()
	if l.p != nil {
		defer l.p.close()
	}
	return l.s.Release(ctx, l.epoch)
}

// renew keeps the lease until ctx ends; it ends the leadership when the
// lease is lost.
func (l *leaseLead) renew(ctx context.Context, opt workspace.LeadOptions) {
	t := time.NewTicker(opt.TTL / 3)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rctx, c := context.WithTimeout(ctx, opt.TTL/3)
		conn, err := l.p.get(rctx)
		if err == nil {
			if err = l.s.Renew(rctx, conn, l.epoch, opt.TTL); err != nil && !errors.Is(err, ErrFenced) {
				l.p.close()
			}
		}
		c()
		switch {
		case err == nil:
			last = time.Now()
		case errors.Is(err, ErrFenced):
			l.lose(ErrFenced)
			return
		case ctx.Err() != nil:
			return
		case time.Since(last) > opt.TTL:
			l.lose(workspace.ErrLeaseLapsed)
			return
		default:
			opt.Logger.Warn("renew the lease", "err", err)
		}
	}
}

// connectOne opens a connection of its own, outside the pool, with the
// schema as search_path.
func (s *Store) connectOne(ctx context.Context) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(s.conn)
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["search_path"] = pgx.Identifier{s.schema}.Sanitize()
	cfg.RuntimeParams["application_name"] = "workspaced daemon"
	cfg.RuntimeParams["idle_in_transaction_session_timeout"] = idleTxTimeout
	return pgx.ConnectConfig(ctx, cfg)
}

// presence is the daemon's own session: the lease names its backend, so
// that when the daemon dies (and its connection with it) a standby or a
// restarted daemon takes over at once rather than after the lease. Only
// one goroutine uses it at a time.
type presence struct {
	s    *Store
	conn *pgx.Conn
}

func (p *presence) get(ctx context.Context) (*pgx.Conn, error) {
	if p.conn != nil && !p.conn.IsClosed() {
		return p.conn, nil
	}
	c, err := p.s.connectOne(ctx)
	if err != nil {
		return nil, err
	}
	p.conn = c
	return c, nil
}

func (p *presence) close() {
	if p.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = p.conn.Close(ctx)
		cancel()
		p.conn = nil
	}
}
