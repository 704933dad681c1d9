package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/workspaced/workspaced/friction"
	"github.com/workspaced/workspaced/locking"
)

// The friction log is the one SQL store's (sqlstore); a change runs here
// as a read-modify-write under the row's lock (SELECT … FOR UPDATE), so
// no writer's change is lost to another's.

// frictionApp is the application_name a writer's transaction carries
// while it holds the row lock, then its agent: a waiter that gives up
// names it as the holder.
const frictionApp = "workspaced friction "

// frictionPath is the log's row in files, its path in the tree.
const frictionPath = friction.File

// UpdateFriction runs change under the row's lock (sqlstore.Driver). The row is made (empty) when
// there is none, so that there is a row to lock; if change then writes
// nothing, the transaction rolls back and leaves no row.
func (d driver) UpdateFriction(ctx context.Context, agent string, timeout time.Duration, change func(old []byte) ([]byte, error)) error {
	tx, err := d.s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("update the friction log: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	// The server bounds the wait for the row lock, in milliseconds.
	ms := max(timeout.Milliseconds(), 1)
	if _, err := tx.Exec(ctx, "SELECT set_config('lock_timeout', $1, true), set_config('application_name', $2, true)",
		strconv.FormatInt(ms, 10), appName(frictionApp+agent)); err != nil {
		return fmt.Errorf("update the friction log: %w", err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO files (path, body) VALUES ($1, '') ON CONFLICT (path) DO NOTHING", frictionPath); err != nil {
		return d.frictionLockErr(ctx, err, timeout)
	}
	var doc string
	if err := tx.QueryRow(ctx, "SELECT body FROM files WHERE path = $1 FOR UPDATE", frictionPath).Scan(&doc); err != nil {
		return d.frictionLockErr(ctx, err, timeout)
	}
	var old []byte
	if doc != "" {
		old = []byte(doc)
	}
	data, err := change(old)
	if err != nil || data == nil {
		return err // rolled back: nothing written, no row made
	}
	if _, err := tx.Exec(ctx, "UPDATE files SET body = $2, updated_at = now() WHERE path = $1", frictionPath, string(data)); err != nil {
		return fmt.Errorf("write the friction log: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("write the friction log: %w", err)
	}
	return nil
}

// lockErr turns a lock wait the server gave up on into a
// *locking.TimeoutError naming the writer holding the row.
func (d driver) frictionLockErr(ctx context.Context, err error, waited time.Duration) error {
	if pgCode(err) != "55P03" { // lock_not_available
		return fmt.Errorf("update the friction log: %w", err)
	}
	te := &locking.TimeoutError{Path: "friction log", Waited: waited}
	var (
		pid   int
		app   string
		since time.Time
		host  *string
	)
	qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if d.s.pool.QueryRow(qctx, `SELECT pid, application_name, xact_start, host(client_addr) FROM pg_stat_activity
		WHERE application_name LIKE $1 AND pid <> pg_backend_pid() AND xact_start IS NOT NULL
		ORDER BY xact_start LIMIT 1`, frictionApp+"%").Scan(&pid, &app, &since, &host) == nil {
		te.Holder = &locking.Holder{PID: pid, Agent: strings.TrimPrefix(app, frictionApp), Since: since.UTC()}
		if host != nil {
			te.Holder.Host = *host
		}
	}
	return te
}

// appName fits s into application_name (at most 63 bytes, printable
// ASCII: the server replaces anything else with '?').
func appName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			b[i] = '?'
		}
	}
	if len(b) > 63 {
		b = b[:63]
	}
	return string(b)
}
