package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// Waking the daemon. A marker's insert notifies the daemon only while the
// wake row says it listens (migrations/0006_wake.sql): notifying commits
// are serialized by PostgreSQL, so agents inserting at once while the
// daemon is awake commit without one and share their WAL flushes.
//
// The daemon is awake or listening. Woken (a notification, or a poll that
// found markers), it commits the tasks named. When it sees a burst — a
// commit taking more than one marker — it sets listening = false, takes
// passes (every task with markers waiting) as long as one finds any, and
// after the burst's last marker stays awake for Linger, looking every
// lingerStep, so that the next burst finds it awake. To go back to LISTEN
// (rest) it commits listening = true, takes the wake lock EXCLUSIVE and
// releases it at once, which waits for every agent transaction that read
// false and has not ended, then takes one more pass: markers committed
// before it are found by it, and an agent whose trigger ran after read
// true and notifies. While the flag stays true after that, the agents'
// notifications bring every marker and it goes back to LISTEN without a
// pass. A new leader starts awake with a full pass and the flag unknown,
// so a flag a dead leader left false costs nothing.

// DefaultLinger is how long the daemon stays awake after a burst's last
// marker.
const DefaultLinger = 50 * time.Millisecond

// lingerStep is how often the daemon looks for markers while it lingers.
const lingerStep = time.Millisecond

// barrierWait bounds the wait for the agents' transactions holding the
// wake lock (an agent may keep its transaction open after its insert);
// past it the daemon stays awake and tries again.
const barrierWait = "1s"

// flag is what the daemon knows of the wake row's listening.
type flag int

const (
	flagUnknown flag = iota
	flagTrue
	flagFalse
)

// waker is the schedule's wake state; only the schedule's goroutine
// touches it (the flag's update to false runs apart and reports on
// flagged).
type waker struct {
	s       *Store
	cfg     ServeConfig
	epoch   int64
	awake   bool
	burst   bool // markers came faster than one at a time this spell
	flag    flag
	busy    bool // an update of the flag to false is under way
	until   time.Time
	next    <-chan time.Time // when set, the next pass waits for it
	flagged chan error
}

func newWaker(s *Store, cfg ServeConfig, epoch int64) *waker {
	return &waker{s: s, cfg: cfg, epoch: epoch, awake: true, flagged: make(chan error, 1)}
}

// woken: a notification came, or a poll found markers.
func (w *waker) woken() {
	if !w.awake {
		w.awake, w.burst = true, false
		w.cfg.Logger.Debug("awake")
	}
}

// took: a commit took n markers. More than one is a burst: a single agent
// waiting for each of its markers to be taken is none, and is better
// served by its notifications than by a look every millisecond. (A
// notification coming while its task's commit runs is no sign of one:
// the agent may have seen the state committed before the worker
// reported.)
func (w *waker) took(n int) {
	if n > 1 {
		w.sawBurst()
		w.until = time.Now().Add(w.cfg.Linger)
	}
}

// heard goes back to LISTEN without a pass, and says so, when the flag
// has stayed true since the barrier that followed its commit (only this
// leader sets it; an old one is fenced): every insert since then
// notified, so a pass would find nothing a notification does not bring.
func (w *waker) heard() bool {
	if w.flag != flagTrue || w.busy {
		return false
	}
	w.awake = false
	w.cfg.Logger.Debug("listening")
	return true
}

// retry makes the next pass wait a moment (after an error).
func (w *waker) retry() {
	w.next = time.After(min(w.cfg.Poll, 100*time.Millisecond))
}

// sawBurst sets listening = false, apart, unless it is or is being.
func (w *waker) sawBurst() {
	w.burst = true
	if w.flag == flagFalse || w.busy {
		return
	}
	w.busy = true
	go func() { w.flagged <- w.s.setListening(context.Background(), false, w.epoch) }()
}

// flagDone takes the report of the update to false.
func (w *waker) flagDone(err error) error {
	w.busy = false
	switch {
	case err == nil:
		w.flag = flagFalse
	case errors.Is(err, ErrFenced):
		return err
	default:
		w.flag = flagUnknown
		w.cfg.Logger.Warn("stop the agents' notifications", "err", err)
	}
	return nil
}

// rest is called when an awake pass found nothing: it lingers after a
// burst, else goes back to LISTEN through the barrier and a last pass.
func (w *waker) rest(ctx context.Context, pass func() (bool, error)) error {
	if w.burst && time.Now().Before(w.until) {
		w.next = time.After(lingerStep)
		return nil
	}
	if w.busy {
		if err := w.flagDone(<-w.flagged); err != nil {
			return err
		}
	}
	if w.heard() {
		return nil
	}
	if err := w.s.setListening(ctx, true, w.epoch); err != nil {
		if !errors.Is(err, ErrFenced) && ctx.Err() == nil {
			w.cfg.Logger.Warn("let the agents notify", "err", err)
			w.retry()
		}
		return err
	}
	// Known true only once the barrier and the last pass are done: till
	// then an agent that read false may have a marker nobody looked for.
	w.flag = flagUnknown
	if err := w.s.wakeBarrier(ctx); err != nil {
		if ctx.Err() == nil {
			w.cfg.Logger.Warn("wait for the agents' inserts", "err", err)
			w.retry()
		}
		return nil
	}
	found, err := pass()
	if err != nil {
		w.retry()
		return nil
	}
	w.flag = flagTrue
	if found {
		// Markers came as it turned: a new awake spell.
		w.burst = false
		return nil
	}
	w.awake = false
	w.cfg.Logger.Debug("listening")
	return nil
}

// setListening sets the wake row's flag while epoch leads; ErrFenced when
// it no longer does (a paused old leader must not silence the agents
// while the new one listens).
func (s *Store) setListening(ctx context.Context, on bool, epoch int64) error {
	tag, err := s.pool.Exec(ctx, `UPDATE wake SET listening = $1 WHERE id = 1
		AND EXISTS (SELECT FROM lease WHERE id = 1 AND epoch = $2 FOR SHARE)`, on, epoch)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return ErrFenced
	}
	return nil
}

// wakeBarrier takes the schema's wake lock exclusive and releases it: it
// returns once every transaction that took it shared (an agent's insert
// that may have read listening = false) has ended.
func (s *Store) wakeBarrier(ctx context.Context) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = '"+barrierWait+"'"); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext('workspaced wake'), hashtext($1))", s.schema)
		return err
	})
}
