package postgres

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// Named locks on PostgreSQL are session advisory locks: LockTaskNamed
// takes a connection of the pool and holds the advisory lock of the
// lock's key on it until Release, so a holder that dies (its connection
// gone) never leaves a stale lock. The locks table records, by the same
// names the file tree gives its lock files (tasks/<id>/.locks/<name>.lock),
// the key and the latest holder; whether a lock is held now is the
// server's pg_locks.

// lockKey is the advisory lock key of a lock name in this schema: the
// first 8 bytes of its FNV-1a hash, so that workspaces in other schemas
// of the database never share a key.
func (s *Store) lockKey(name string) int64 {
	h := fnv.New64a()
	h.Write([]byte(s.schema))
	h.Write([]byte{0})
	h.Write([]byte(name))
	return int64(binary.BigEndian.Uint64(h.Sum(nil)))
}

// advisoryLock is a lock LockTaskNamed gave: the connection holding it.
type advisoryLock struct {
	conn *pgxpool.Conn
	key  int64
	once sync.Once
	err  error
}

// Release gives the lock back and its connection to the pool; a second
// call does nothing. Should the unlock fail, the connection is closed,
// which ends its session and so the lock.
func (l *advisoryLock) Release() error {
	l.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var ok bool
		if err := l.conn.QueryRow(ctx, "SELECT pg_advisory_unlock($1)", l.key).Scan(&ok); err != nil || !ok {
			l.err = err
			_ = l.conn.Conn().Close(ctx)
		}
		l.conn.Release()
	})
	return l.err
}

// lock takes the advisory lock of name on a connection of its own,
// waiting at most timeout (the server's lock_timeout bounds the wait;
// zero tries once without waiting), and records the holder.
func (s *Store) lock(ctx context.Context, name, taskID, lock, agent string, timeout time.Duration) (*advisoryLock, error) {
	key := s.lockKey(name)
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	// Any failure from here on closes the connection rather than giving
	// it back: an error (a cancel) may have come after the server granted
	// the lock, and a session that ends holds nothing.
	fail := func(err error) (*advisoryLock, error) {
		_ = conn.Conn().Close(context.WithoutCancel(ctx))
		conn.Release()
		return nil, err
	}
	start := time.Now()
	var got bool
	if timeout <= 0 {
		err = conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", key).Scan(&got)
	} else {
		_, err = conn.Exec(ctx, "SELECT set_config('lock_timeout', $1, false)", strconv.FormatInt(max(timeout.Milliseconds(), 1), 10))
		if err == nil {
			_, err = conn.Exec(ctx, "SELECT pg_advisory_lock($1)", key)
			got = err == nil
		}
		if pgCode(err) == "55P03" { // lock_not_available: the timeout
			err = nil
		}
		if err == nil {
			_, err = conn.Exec(ctx, "RESET lock_timeout")
		}
	}
	switch {
	case ctx.Err() != nil:
		return fail(fmt.Errorf("lock %s: %w", name, ctx.Err()))
	case err != nil:
		return fail(fmt.Errorf("lock %s: %w", name, err))
	case !got:
		conn.Release()
		return nil, &workspace.Error{Kind: workspace.ErrLocked, Op: "lock " + name,
			Err:  &locking.TimeoutError{Path: name, Holder: s.holder(ctx, name), Waited: time.Since(start)},
			Hint: "another process holds it; retry later, or raise lock_timeout in workspace.json"}
	}
	host, _ := os.Hostname()
	h, _ := json.Marshal(locking.Holder{PID: os.Getpid(), Agent: agent, Since: now(), Host: host})
	if _, err := conn.Exec(ctx, `INSERT INTO locks (name, holder, since, key, task_id, lock) VALUES ($1, $2, now(), $3, $4, $5)
		ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, since = excluded.since, key = excluded.key`,
		name, string(h), key, taskID, lock); err != nil {
		return fail(fmt.Errorf("lock %s: record the holder: %w", name, err))
	}
	return &advisoryLock{conn: conn, key: key}, nil
}

// holder reads the latest holder recorded for a lock; nil when none is.
func (s *Store) holder(ctx context.Context, name string) *locking.Holder {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	var raw string
	if err := s.pool.QueryRow(ctx, "SELECT holder FROM locks WHERE name = $1", name).Scan(&raw); err != nil {
		return nil
	}
	return sqlstore.ParseHolder(raw)
}

// heldSQL is true when some session of this database holds the advisory
// lock of key (a bigint key is split into classid, its high half, and
// objid, its low half, with objsubid 1).
const heldSQL = `EXISTS (SELECT 1 FROM pg_locks p WHERE p.locktype = 'advisory' AND p.granted AND p.objsubid = 1
	AND p.database = (SELECT oid FROM pg_database WHERE datname = current_database())
	AND p.classid::bigint = ((%[1]s >> 32) & 4294967295) AND p.objid::bigint = (%[1]s & 4294967295))`

// Locks lists the locks ever taken in the workspace by name, each held or
// not with its latest holder; the lease, the daemon's lock, comes first
// (held while a daemon leads).
func (s *Store) Locks(ctx context.Context) ([]workspace.LockInfo, error) {
	out := []workspace.LockInfo{}
	var (
		epoch  int64
		holder string
		live   bool
	)
	if err := s.pool.QueryRow(ctx, `SELECT epoch, holder, holder <> '' AND expires_at >= clock_timestamp() FROM lease WHERE id = 1`).Scan(&epoch, &holder, &live); err != nil {
		return nil, fmt.Errorf("list locks: read the lease: %w", err)
	}
	if epoch > 0 {
		out = append(out, workspace.LockInfo{Name: "lease", Held: live, Holder: &workspace.LockHolder{Agent: holder}})
	}
	rows, err := s.pool.Query(ctx, "SELECT name, task_id, lock, holder, "+fmt.Sprintf(heldSQL, "l.key")+
		` FROM locks l ORDER BY name COLLATE "C"`)
	if err != nil {
		return nil, fmt.Errorf("list locks: %w", err)
	}
	var name, task, lock string
	var held bool
	_, err = pgx.ForEachRow(rows, []any{&name, &task, &lock, &holder, &held}, func() error {
		out = append(out, workspace.LockInfo{Name: name, TaskID: task, Lock: lock, Held: held, Holder: (*workspace.LockHolder)(sqlstore.ParseHolder(holder))})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list locks: %w", err)
	}
	return out, nil
}

// held reports whether a lock of the workspace is held now, and its latest
// holder.
func (s *Store) held(ctx context.Context, name string) (bool, *locking.Holder, error) {
	var ok bool
	err := s.pool.QueryRow(ctx, "SELECT "+fmt.Sprintf(heldSQL, "$1::bigint"), s.lockKey(name)).Scan(&ok)
	if err != nil {
		return false, nil, err
	}
	if !ok {
		return false, nil, nil
	}
	return true, s.holder(ctx, name), nil
}

// Lock takes an advisory lock (sqlstore.Driver).
func (d driver) Lock(ctx context.Context, name, taskID, lock, agent string, timeout time.Duration) (workspace.Lock, error) {
	l, err := d.s.lock(ctx, name, taskID, lock, agent, timeout)
	if err != nil {
		return nil, err // not a nil *lock in an interface
	}
	return l, nil
}

// Held says whether a lock is held now, and by whom.
func (d driver) Held(ctx context.Context, name string) (bool, *locking.Holder, error) {
	return d.s.held(ctx, name)
}
