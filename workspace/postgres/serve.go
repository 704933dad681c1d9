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

// The daemon on PostgreSQL: it takes the lease (or waits for it as a
// standby), LISTENs for new markers, polls for those whose notification
// was lost (or where a pooler drops LISTEN), and commits each task with
// waiting markers chunk by chunk, one worker per task at a time.

// Defaults of ServeConfig.
const (
	DefaultPoll    = time.Second
	DefaultWorkers = 4
)

// ServeConfig configures Serve. Zero fields take the Default… values.
type ServeConfig struct {
	// Holder names this daemon in the lease row (host:pid by default).
	Holder string
	// Standby waits for the lease instead of failing when another
	// daemon holds it, and waits again after losing it.
	Standby  bool
	LeaseTTL time.Duration
	// Poll is how often the markers table is looked at without a
	// notification.
	Poll    time.Duration
	Chunk   int
	Workers int
	Logger  *slog.Logger
	// Leading, when set, is called each time this daemon becomes the
	// leader, with its epoch.
	Leading func(epoch int64)
	// Rescan is how often the subtasks in progress are checked for
	// timeouts (zero: the settings' daemon rescan).
	Rescan time.Duration
	// CleanupInterval is how often retention runs while leading (zero:
	// the settings' cleanup_interval; negative: never).
	CleanupInterval time.Duration
}

func (c ServeConfig) withDefaults(set workspace.Settings) ServeConfig {
	if c.Rescan <= 0 {
		c.Rescan = time.Duration(set.Daemon.Rescan)
	}
	if c.CleanupInterval == 0 {
		c.CleanupInterval = time.Duration(set.Daemon.CleanupInterval)
	}
	if c.Holder == "" {
		host, _ := os.Hostname()
		c.Holder = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = DefaultLeaseTTL
	}
	if c.Poll <= 0 {
		c.Poll = DefaultPoll
	}
	if c.Chunk <= 0 {
		c.Chunk = DefaultChunk
	}
	if c.Workers <= 0 {
		c.Workers = DefaultWorkers
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Serve runs the single writer until ctx ends. Without Standby it fails
// at once with an ErrLocked error naming the holder when another daemon
// holds the lease; with it, it waits, and after losing the lease (another
// took over) it waits again. On a clean stop it releases the lease.
func (s *Store) Serve(ctx context.Context, cfg ServeConfig) error {
	cfg = cfg.withDefaults(s.settings)
	log := cfg.Logger
	p := &presence{s: s}
	defer p.close()
	lapsed := false
	for {
		epoch, err := s.waitLease(ctx, cfg, p, lapsed)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		log.Info("leading", "epoch", epoch, "holder", cfg.Holder, "schema", s.schema)
		if cfg.Leading != nil {
			cfg.Leading(epoch)
		}
		err = s.lead(ctx, cfg, epoch, p)
		if ctx.Err() != nil {
			rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_ = s.Release(rctx, epoch)
			cancel()
			return nil
		}
		if !errors.Is(err, ErrFenced) && !errors.Is(err, errLeaseLapsed) {
			return err
		}
		log.Warn("stepped down", "epoch", epoch, "why", err)
		// A lease that lapsed while the database was out of reach is
		// taken again once it is back, unless another daemon has it.
		lapsed = errors.Is(err, errLeaseLapsed)
		if !cfg.Standby && !lapsed {
			return fmt.Errorf("serve: %w", err)
		}
	}
}

// waitLease takes the lease, waiting for it as a standby. retry keeps
// trying while the database is out of reach, even without Standby.
func (s *Store) waitLease(ctx context.Context, cfg ServeConfig, p *presence, retry bool) (int64, error) {
	tick := cfg.LeaseTTL / 5
	// A daemon restarted right after its predecessor was killed may find
	// the predecessor's session still being torn down by the server:
	// without --standby it looks again for a moment before giving up.
	giveUp := time.Now().Add(time.Second)
	for {
		var (
			epoch int64
			li    LeaseInfo
			ok    bool
		)
		conn, err := p.get(ctx)
		if err == nil {
			epoch, li, ok, err = s.Acquire(ctx, conn, cfg.Holder, cfg.LeaseTTL)
			if err != nil {
				p.close()
			}
		}
		switch {
		case ok:
			return epoch, nil
		case err != nil && !cfg.Standby && !retry:
			return 0, err
		case err != nil:
			cfg.Logger.Warn("take the lease", "err", err)
		case !cfg.Standby && time.Now().Before(giveUp):
			tick = 100 * time.Millisecond
		case !cfg.Standby:
			return 0, &workspace.Error{Kind: workspace.ErrLocked, Op: "serve",
				Msg:  fmt.Sprintf("another daemon serves this workspace: %s (epoch %d, lease until %s)", li.Holder, li.Epoch, li.ExpiresAt.UTC().Format(time.RFC3339)),
				Hint: "stop it first, or run this one as its standby with serve --standby"}
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(tick):
		}
	}
}

// errLeaseLapsed says the lease could not be renewed for longer than it
// runs (the database unreachable): another daemon may have taken over, so
// this one stops and takes the lease again.
var errLeaseLapsed = errors.New("the lease could not be renewed before it expired")

// lead serves while epoch is the lease's.
func (s *Store) lead(ctx context.Context, cfg ServeConfig, epoch int64, p *presence) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	defer wg.Wait()
	wake := make(chan string, 1024)
	wg.Add(4)
	go func() { defer wg.Done(); s.renew(ctx, cfg, epoch, p, cancel) }()
	go func() { defer wg.Done(); s.listen(ctx, cfg, wake) }()
	go func() { defer wg.Done(); every(ctx, cfg.Rescan, func() { s.checkTimeouts(ctx, cfg.Logger) }) }()
	go func() { defer wg.Done(); every(ctx, cfg.CleanupInterval, func() { s.cleanup(ctx, cfg.Logger) }) }()
	err := s.schedule(ctx, cfg, epoch, wake)
	if c := context.Cause(ctx); c != nil && !errors.Is(c, context.Canceled) {
		return c
	}
	return err
}

// renew keeps the lease; it cancels leading when the lease is lost.
func (s *Store) renew(ctx context.Context, cfg ServeConfig, epoch int64, p *presence, cancel context.CancelCauseFunc) {
	t := time.NewTicker(cfg.LeaseTTL / 3)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rctx, c := context.WithTimeout(ctx, cfg.LeaseTTL/3)
		conn, err := p.get(rctx)
		if err == nil {
			if err = s.Renew(rctx, conn, epoch, cfg.LeaseTTL); err != nil && !errors.Is(err, ErrFenced) {
				p.close()
			}
		}
		c()
		switch {
		case err == nil:
			last = time.Now()
		case errors.Is(err, ErrFenced):
			cancel(ErrFenced)
			return
		case time.Since(last) > cfg.LeaseTTL:
			cancel(errLeaseLapsed)
			return
		default:
			cfg.Logger.Warn("renew the lease", "err", err)
		}
	}
}

// listen forwards the task ids of marker notifications to wake,
// reconnecting after an error; after each (re)connection it sends ""
// (look at every task), since notifications may have been lost meanwhile.
func (s *Store) listen(ctx context.Context, cfg ServeConfig, wake chan<- string) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := s.listenOnce(ctx, wake)
		if ctx.Err() != nil {
			return
		}
		cfg.Logger.Warn("listen for markers", "err", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

func (s *Store) listenOnce(ctx context.Context, wake chan<- string) error {
	conn, err := s.connectOne(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{s.channel()}.Sanitize()); err != nil {
		return err
	}
	send(ctx, wake, "")
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		send(ctx, wake, n.Payload)
	}
}

func send(ctx context.Context, wake chan<- string, id string) {
	select {
	case wake <- id:
	case <-ctx.Done():
	}
}

// done is what a worker reports after committing a task.
type done struct {
	id   string
	more bool // a full chunk was taken: look again at once
	err  error
}

// schedule owns the set of tasks to look at: it queues the tasks
// notifications and polls name, gives each to one worker at a time, and
// looks again at a task woken while a worker had it.
func (s *Store) schedule(ctx context.Context, cfg ServeConfig, epoch int64, wake <-chan string) error {
	ctx, cancel := context.WithCancel(ctx)
	jobs := make(chan string)
	results := make(chan done)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(jobs)
	defer cancel() // first: a worker waiting to report then returns
	k := newKnown()
	for range cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range jobs {
				a, err := s.commitKnown(ctx, k, id, cfg.Chunk, epoch)
				if err == nil && a.Taken > 0 {
					cfg.Logger.Debug("committed", "task", id, "markers", a.Taken, "journal_seq", a.Seq)
				}
				if a.Stopped != nil {
					cfg.Logger.Warn("apply markers", "task", id, "err", a.Stopped)
				}
				if len(a.Events) > 0 {
					s.observe(ctx, cfg.Logger, a.Events)
				}
				select {
				case results <- done{id: id, more: a.Taken == cfg.Chunk && a.Stopped == nil, err: err}:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	var (
		queue    []string
		queued   = map[string]bool{}
		inflight = map[string]bool{}
		again    = map[string]bool{}
		poll     = time.NewTicker(cfg.Poll)
	)
	defer poll.Stop()
	add := func(id string) {
		switch {
		case inflight[id]:
			again[id] = true
		case !queued[id]:
			queued[id] = true
			queue = append(queue, id)
		}
	}
	pollAll := func() {
		ids, err := s.waitingTasks(ctx)
		if err != nil {
			if ctx.Err() == nil {
				cfg.Logger.Warn("look for markers", "err", err)
			}
			return
		}
		for _, id := range ids {
			add(id)
		}
	}
	pollAll()
	for {
		var out chan string
		var head string
		if len(queue) > 0 {
			out, head = jobs, queue[0]
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case id := <-wake:
			if id == "" {
				pollAll()
			} else {
				add(id)
			}
		case <-poll.C:
			pollAll()
		case out <- head:
			queue = queue[1:]
			delete(queued, head)
			inflight[head] = true
		case r := <-results:
			delete(inflight, r.id)
			if errors.Is(r.err, ErrFenced) {
				return ErrFenced
			}
			if r.err != nil && ctx.Err() == nil {
				// The next poll looks at it again.
				cfg.Logger.Warn("commit", "task", r.id, "err", r.err)
			}
			if r.err == nil && (r.more || again[r.id]) {
				add(r.id)
			}
			delete(again, r.id)
		}
	}
}

// waitingTasks are the tasks with markers waiting.
func (s *Store) waitingTasks(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, "SELECT DISTINCT task_id FROM markers")
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
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
