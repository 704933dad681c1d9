// Package postgres keeps a workspace in PostgreSQL: the same tasks,
// products, markers, journal, state, backups and events as the file tree,
// as rows of tables in one schema, so that agents on many machines share
// one workspace with the same guarantees.
//
// Agents insert markers; one daemon (the leader, elected through the lease
// row, see lease.go) takes them, journals them and folds them into the
// state with the state machine, one transaction per chunk (commit.go).
// The tables are the protocol: an agent in any language needs only SQL.
//
// A Store is safe for concurrent use; its pool holds the connections.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// DefaultSchema is the schema of a URL without ?schema=.
const DefaultSchema = "workspaced"

// defaultMaxConns is the pool's size unless the URL sets pool_max_conns.
const defaultMaxConns = 16

// idleTxTimeout bounds how long a transaction of the workspace may sit
// idle: none of ours waits on anything but the server.
const idleTxTimeout = "5s"

var (
	// ErrSchemaTooNew says the database was migrated by a newer
	// workspaced than this one.
	ErrSchemaTooNew = errors.New("the workspace's schema is newer than this workspaced")
	// ErrNotInitialized says the schema holds no workspace yet.
	ErrNotInitialized = errors.New("no workspace in this schema")
)

// IsURL reports whether a root names a PostgreSQL database rather than a
// directory: postgres://… or postgresql://….
func IsURL(root string) bool {
	return strings.HasPrefix(root, "postgres://") || strings.HasPrefix(root, "postgresql://")
}

// Store is a workspace in one schema of a PostgreSQL database.
type Store struct {
	*sqlstore.Store // the queries the SQL stores share, over driver
	pool            *pgxpool.Pool
	schema          string
	conn            string              // the connection string, without ?schema=
	hub             workspace.CommitHub // the LISTEN shared by Commits (commits.go)
	notes           *notifier           // the notifications of env puts, after their commit
	watchEvery      time.Duration       // how often a watch polls; watchPoll when zero (tests shorten it)
}

// schemaName is what a schema may be called: a channel name
// (workspaced_markers_<schema>) must fit PostgreSQL's 63 bytes.
var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,39}$`)

// ParseURL splits a root URL into the connection string pgx and libpq
// understand and the schema its ?schema= names (DefaultSchema without).
func ParseURL(root string) (conn, schema string, err error) {
	u, err := url.Parse(root)
	if err != nil || !IsURL(root) {
		return "", "", &workspace.Error{Kind: workspace.ErrInvalid, Op: "open " + redact(root),
			Msg: "not a postgres:// URL", Hint: "name the database as postgres://user@host/db?schema=name"}
	}
	q := u.Query()
	schema = q.Get("schema")
	q.Del("schema")
	u.RawQuery = q.Encode()
	if schema == "" {
		schema = DefaultSchema
	}
	if !schemaName.MatchString(schema) {
		return "", "", &workspace.Error{Kind: workspace.ErrInvalid, Op: "open " + redact(root),
			Msg:  fmt.Sprintf("schema %q is not a name of lower-case letters, digits and underscores (at most 40)", schema),
			Hint: "pick a schema such as ?schema=team_a"}
	}
	return u.String(), schema, nil
}

// redact is a URL without its password, for messages.
func redact(root string) string {
	u, err := url.Parse(root)
	if err != nil {
		return "the root URL"
	}
	return u.Redacted()
}

// Open connects to the workspace at root (a postgres:// URL) and checks
// its schema: it refuses a schema no workspace was initialized in
// (ErrNotInitialized) and one migrated by a newer workspaced
// (ErrSchemaTooNew). It migrates nothing; Init does.
func Open(ctx context.Context, root string) (*Store, error) {
	s, err := connect(ctx, root)
	if err != nil {
		return nil, err
	}
	return sqlstore.Ready(ctx, s, s.Store, s.checkVersion)
}

// connect makes the pool; every connection's search_path is the schema,
// set at connection start (which also works through a pooler).
func connect(ctx context.Context, root string) (*Store, error) {
	conn, schema, err := ParseURL(root)
	if err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(conn)
	if err != nil {
		return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "open " + redact(root), Err: err,
			Hint: "name the database as postgres://user@host/db?schema=name"}
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
	cfg.ConnConfig.RuntimeParams["application_name"] = "workspaced"
	if !strings.Contains(conn, "pool_max_conns") {
		// pgxpool's default is the number of CPUs, at least 4: writers
		// that no longer wait for each other would wait for a connection.
		cfg.MaxConns = max(cfg.MaxConns, defaultMaxConns)
	}
	// A transaction of a stalled process (SIGSTOP, a partition) would hold
	// its locks, among them the share lock of a commit on the lease row
	// that a standby's takeover waits for: the server ends it.
	cfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"] = idleTxTimeout
	cfg.AfterConnect = preferLZ4
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", redact(root), err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to %s: %w", redact(root), err)
	}
	s := &Store{pool: pool, schema: schema, conn: conn}
	s.notes = &notifier{pool: pool, channel: s.eventsChannel()}
	s.Store = sqlstore.New(driver{s})
	return s, nil
}

// preferLZ4 has a connection of the pool compress the large values it
// writes (the state of a wide task and its backup, an env or memory value
// over the TOAST threshold of about 2 KB) with lz4 where the server has
// it, instead of the default pglz: an UPDATE of a 0.5 MB states row took
// 10 ms with pglz and 4 with lz4, most of a wide task's commit. The
// setting is the session's default for the columns that name no method
// (every column of the schema); a reader decompresses either kind alike,
// and a server built without lz4 keeps pglz.
func preferLZ4(ctx context.Context, c *pgx.Conn) error {
	_, err := c.Exec(ctx, `SELECT set_config('default_toast_compression', 'lz4', false)
		FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)`)
	if err != nil {
		return fmt.Errorf("set the connection's compression: %w", err)
	}
	return nil
}

// Close sends the notifications still due and closes the pool.
func (s *Store) Close() error {
	s.notes.close()
	s.pool.Close()
	return nil
}

// Pool is the store's connection pool.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Schema is the schema the store's tables live in.
func (s *Store) Schema() string { return s.schema }

// channel is the name the daemon LISTENs on for new markers.
func (s *Store) channel() string { return "workspaced_markers_" + s.schema }
