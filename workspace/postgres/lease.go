package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// Leadership: the lease row names the daemon that serves the workspace,
// its epoch and until when its lease runs, in the database's clock (so
// the hosts' clocks do not matter). A daemon takes the lease only when it
// has expired or was released, bumping the epoch; it renews it while it
// leads. Every commit checks the epoch in its own transaction (commit.go),
// so a daemon that was paused past its lease, or cut off, writes nothing
// once another took over.

// DefaultLeaseTTL is how long a lease runs without renewal: the longest a
// standby waits after the leader died.
const DefaultLeaseTTL = 5 * time.Second

// LeaseInfo is the lease row.
type LeaseInfo struct {
	Epoch     int64
	Holder    string
	ExpiresAt time.Time
	// Live says the lease has not expired (by the database's clock).
	Live bool
}

// querier is a pool or one connection.
type querier interface {
	QueryRow(context.Context, string, ...any) pgx.Row
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}

// Acquire takes the lease for holder when it is free, for ttl: expired,
// released, or its holder's session gone (the process died: its server
// backend exits with its connection). The session of q (the daemon's
// own connection) becomes the lease's. It returns the new epoch and
// true, or the current lease and false when another daemon holds it.
func (s *Store) Acquire(ctx context.Context, q querier, holder string, ttl time.Duration) (int64, LeaseInfo, bool, error) {
	var epoch int64
	err := q.QueryRow(ctx, `UPDATE lease SET epoch = epoch + 1, holder = $1, backend_pid = pg_backend_pid(),
		expires_at = clock_timestamp() + make_interval(secs => $2)
		WHERE id = 1 AND (expires_at < clock_timestamp() OR holder = ''
			OR NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = lease.backend_pid))
		RETURNING epoch`,
		holder, ttl.Seconds()).Scan(&epoch)
	if err == nil {
		return epoch, LeaseInfo{}, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return 0, LeaseInfo{}, false, fmt.Errorf("take the lease: %w", err)
	}
	li, err := s.Lease(ctx)
	return 0, li, false, err
}

// Lease reads the lease row.
func (s *Store) Lease(ctx context.Context) (LeaseInfo, error) {
	var li LeaseInfo
	// A lease never taken expires at -infinity: no time.Time; it is left
	// zero.
	var exp pgtype.Timestamptz
	err := s.pool.QueryRow(ctx, `SELECT epoch, holder, expires_at, expires_at >= clock_timestamp() AND holder <> ''
		FROM lease WHERE id = 1`).Scan(&li.Epoch, &li.Holder, &exp, &li.Live)
	if err != nil {
		return li, fmt.Errorf("read the lease: %w", err)
	}
	if exp.Valid && exp.InfinityModifier == pgtype.Finite {
		li.ExpiresAt = exp.Time
	}
	return li, nil
}

// Renew extends the lease of epoch by ttl; ErrFenced when the epoch is no
// longer the lease's.
func (s *Store) Renew(ctx context.Context, q querier, epoch int64, ttl time.Duration) error {
	tag, err := q.Exec(ctx, `UPDATE lease SET expires_at = clock_timestamp() + make_interval(secs => $2),
		backend_pid = pg_backend_pid() WHERE id = 1 AND epoch = $1`, epoch, ttl.Seconds())
	if err != nil {
		return fmt.Errorf("renew the lease: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrFenced
	}
	return nil
}

// Release gives the lease of epoch up, so that a standby takes over at
// once; it does nothing when the epoch is no longer the lease's.
func (s *Store) Release(ctx context.Context, epoch int64) error {
	_, err := s.pool.Exec(ctx, `UPDATE lease SET holder = '', expires_at = '-infinity' WHERE id = 1 AND epoch = $1`, epoch)
	return err
}
