package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// Wake-ups on SQLite: every commit of any process writes the database's
// write-ahead log, <db>-wal (and a checkpoint the database file), so an
// fsnotify watch of the database's directory, filtered on those two names,
// hears every write on this machine. On a write the daemon looks for the
// tasks with markers waiting (or no state yet) with one read; a poll every
// DefaultPoll does the same, for an event the watch missed.

// DefaultPoll is how often the markers are looked at without a write
// heard.
const DefaultPoll = time.Second

// settle is how long a watch waits after a write it heard, for the rest
// of a burst, before it looks.
const settle = 250 * time.Microsecond

// Wakeups starts the wake-up source (workspace.Served). opt.Interval is
// the poll (zero: DefaultPoll).
func (s *Store) Wakeups(ctx context.Context, opt workspace.WakeOptions) (workspace.Wakeups, error) {
	poll, err := sqlstore.WakePoll(opt, "watch", "SQLite", "a sqlite: root wakes on a watch of its database file and a poll: leave --wakeups out", DefaultPoll)
	if err != nil {
		return nil, err
	}
	fw, err := s.watchFiles()
	if err != nil {
		return nil, err
	}
	return sqlstore.StartWakeups(ctx, "watch", func(ctx context.Context, c chan<- workspace.Wake) {
		defer fw.Close()
		s.loop(ctx, fw, poll, true, func(err error) {
			if err != nil {
				sqlstore.Send(ctx, c, workspace.Wake{Err: err})
				return
			}
			sqlstore.PollWaiting(ctx, c, s.waitingTasks)
		})
	}), nil
}

// watchFiles watches the database's directory.
func (s *Store) watchFiles() (*fsnotify.Watcher, error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", s.path, err)
	}
	if err := fw.Add(filepath.Dir(s.path)); err != nil {
		fw.Close()
		return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "watch " + filepath.Dir(s.path), Err: err,
			Hint: "raise fs.inotify.max_user_watches, or check the directory's permissions"}
	}
	return fw, nil
}

// followMax bounds the looks that follow a write heard: a write is heard
// when its frames reach the WAL, before its commit is visible (the
// commit's fsync and the WAL index come after), so the loop looks again
// at settle, 2·settle, 4·settle… until the data version moves, and stops
// once the wait would pass followMax (the poll covers a slower commit).
// Looking every settle for the first 2 ms saw a claim's verdict no sooner
// (2.95–3.16 ms against 2.97–3.04 ms, BenchmarkClaimVerdict) and cost the
// processes under contention a fifth of their panel reads.
const followMax = 256 * time.Millisecond

// ownGuard is the soonest the daemon's loop looks again after reading at
// the end of its own commit. Between the commit's COMMIT and the watch
// put back (the loop's next step), another writer may write unheard; a
// commit that is visible by the read at the end is seen there, and one
// still under way then (its fsync, if it syncs the log itself) is looked
// for ownGuard later and at each doubling of the follow after.
const ownGuard = 2 * time.Millisecond

// loop calls look (with nil) once now, then after every write to the
// database heard on fw once it is committed (a burst coalesced) and
// every poll, and with an error when the watch reports one, until ctx
// ends. One goroutine owns it. daemon says whose loop it is: the
// daemon's wake-ups pass over the daemon's own commits, every other
// loop waits for them (versions).
//
// A write heard is enough until the next look: the watch is taken off
// the directory then and put back before that look reads the data
// version, so that nothing written after the version read goes unheard.
// A commit writes the log a page at a time, each write an event, and a
// daemon's commit of a large state is hundreds of them: heard one by
// one, they cost the process more than the commit itself (at 10,000
// subtasks, 600 wake-ups of the watch's goroutine a commit).
func (s *Store) loop(ctx context.Context, fw *fsnotify.Watcher, poll time.Duration, daemon bool, look func(error)) {
	dir := filepath.Dir(s.path)
	db, wal := filepath.Base(s.path), filepath.Base(s.path)+"-wal"
	ver := s.dataVersions(ctx, daemon)
	defer ver.close()
	muted := false
	// Every loop but the daemon's waits for the daemon's commits, and
	// hears its bell on a watch of the file (kept when the directory's is
	// taken off); until a daemon has made the file, each poll tries again.
	belled := daemon
	listen := func() {
		if !belled && fw.Add(bellPath(s.path)) == nil {
			belled = true
		}
	}
	listen()
	// unmute puts the watch back, before a look; when it cannot, the
	// look and the poll go on without it and the next look tries again.
	unmute := func() {
		if !muted {
			return
		}
		if err := fw.Add(dir); err != nil {
			look(fmt.Errorf("watch %s again: %w", dir, err))
			return
		}
		muted = false
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	burst := time.NewTimer(time.Hour)
	burst.Stop()
	armed, wait := false, settle
	var due time.Time // of the next look, when armed
	// The daemon's loop leaves what it hears while the daemon commits to
	// the commit's end (own.go): ownDone receives it when asked for.
	var ownDone <-chan struct{}
	ownWaiting := false
	if daemon {
		ownDone = s.own.done
	}
	toOwnEnd := func() bool {
		if !daemon || !s.own.underWay() {
			return false
		}
		if !ownWaiting {
			ownWaiting = s.own.await()
		}
		return ownWaiting
	}
	seen := ver.read()
	look(nil)
	for {
		select {
		case <-ctx.Done():
			return
		case <-ownDone:
			// The daemon's commits under way have ended: what was heard
			// meanwhile is visible now. Another writer may have begun as
			// the last ended, its writes unheard with the watch off: the
			// follow goes on, its next look ownGuard away at the soonest.
			ownWaiting = false
			unmute()
			if v := ver.read(); v != seen || v < 0 {
				seen = v
				look(nil)
			}
			if wait = max(wait, ownGuard); wait <= followMax {
				armed, due = true, time.Now().Add(wait)
				burst.Reset(wait)
			}
		case ev, ok := <-fw.Events:
			if !ok {
				return
			}
			if !daemon && isBell(ev.Name, s.path) {
				// A commit of the daemon's is durable and visible: read
				// now, and follow as after any move.
				unmute()
				if v := ver.read(); v != seen || v < 0 {
					seen, wait = v, settle
					look(nil)
					if !armed {
						armed, due = true, time.Now().Add(settle)
						burst.Reset(settle)
					}
				}
				continue
			}
			if n := filepath.Base(ev.Name); n != db && n != wal {
				continue
			}
			// The daemon reads at once a write heard with the watch
			// still on (the first since the last look): an agent's
			// insert is a few frames, often visible by the time its
			// first is heard, and a look at settle would come a
			// millisecond later (a Go timer under a millisecond waits
			// for the poller's). The follow below covers a commit not
			// visible yet, as before.
			if daemon && !muted && !s.own.underWay() {
				if v := ver.read(); v != seen || v < 0 {
					seen = v
					look(nil)
				}
			}
			// A write heard brings the next look to settle from now,
			// unless it is due sooner (a stream of writes does not put
			// it off); the writes until then need not be heard.
			if !muted && fw.Remove(dir) == nil {
				muted = true
			}
			if toOwnEnd() {
				continue // the daemon's commit, or a write before it
			}
			wait = settle
			if now := time.Now(); !armed || due.Sub(now) > settle {
				armed, due = true, now.Add(settle)
				burst.Reset(settle)
			}
		case err, ok := <-fw.Errors:
			if !ok {
				return
			}
			look(fmt.Errorf("watch %s: %w", s.path, err))
			unmute()
			seen = ver.read()
			look(nil)
		case <-burst.C:
			if toOwnEnd() {
				armed = false // read at the commit's end: now it would wait for it
				continue
			}
			unmute()
			if v := ver.read(); v != seen || v < 0 {
				seen, wait = v, settle
				look(nil)
			} else {
				wait *= 2
			}
			if armed = wait <= followMax; armed {
				due = time.Now().Add(wait)
				burst.Reset(wait)
			}
		case <-tick.C:
			listen()
			unmute()
			seen = ver.read()
			look(nil)
		}
	}
}

// versions reads PRAGMA data_version: the number moves when another
// connection commits, not when the one that reads it does. The daemon's
// wake-ups read it on the daemon's commit connection (cdb), where the
// daemon's own commits leave it as it was: a write heard that was the
// daemon's own commit starts no look for waiting markers, only the
// follow (an agent cannot commit while that connection holds the write
// lock: SQLite has one writer). A read waits for a commit under way,
// which holds the connection; a wake-up could not be acted on sooner,
// the daemon's commits taking turns on it. Every other loop (the commit
// hub's waiters, a watch) waits for exactly those commits, and reads it
// on a read connection of its own, as does a store opened read-only
// (a connection a transaction, none kept). The statement is prepared
// once: the loop reads it after every write it hears.
type versions struct {
	c  *sql.Conn // the read connection held, or nil on cdb
	st *sql.Stmt
}

func (s *Store) dataVersions(ctx context.Context, daemon bool) versions {
	if daemon && s.ro == nil {
		st, err := s.cdb.PrepareContext(ctx, "PRAGMA data_version")
		if err != nil {
			return versions{}
		}
		return versions{st: st}
	}
	c, err := s.rdb.Conn(ctx)
	if err != nil {
		return versions{}
	}
	st, err := c.PrepareContext(ctx, "PRAGMA data_version")
	if err != nil {
		c.Close()
		return versions{}
	}
	return versions{c: c, st: st}
}

// read is the data version, or -1 when it cannot be read (the caller
// then looks anyway). It runs under no deadline: the pragma waits for no
// writer (a read of the log's index, its locks bounded by busy_timeout),
// and a context that can end costs the driver a goroutine each call
// (modernc.org/sqlite's interrupt), where the loop reads the version
// after every write it hears, several times.
func (v versions) read() int64 {
	if v.st == nil {
		return -1
	}
	var n int64
	if err := v.st.QueryRowContext(context.Background()).Scan(&n); err != nil {
		return -1
	}
	return n
}

func (v versions) close() {
	if v.st != nil {
		v.st.Close()
	}
	if v.c != nil {
		v.c.Close()
	}
}
