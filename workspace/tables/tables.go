// Package tables moves a workspace between the canonical file tree and
// the tables a database backend keeps it in (workspace/postgres,
// workspace/sqlite: the same tables, the same SQL). The tables keep every
// document as the exact bytes of its file, so Export writes the tree byte
// for byte and ReadTree reads one back:
//
//	workspace.json, .gitignore, config/, friction/, skills/, … → files (by path)
//	config/tokens.json                                  → tokens (one row per grant)
//	tasks/<id>/task.json                                → tasks
//	tasks/<id>/state.json                               → states
//	tasks/<id>/journal/<seq>[-<seq>].json               → journal (one row per record, file kept)
//	tasks/<id>/backups/<name>                           → backups (name kept)
//	tasks/<id>/events.log                               → events (one row per line)
//	tasks/<id>/threads/<thread>.json                    → threads
//	tasks/<id>/env/<key>.json                           → entries (thread scope)
//	tasks/<id>/sessions/<thread>/<key>.json             → entries (session scope)
//	memory/global/<key>.json, memory/agents/<a>/<k>.json → entries (global, agent)
//	memory/global/.history/<k>/<ms>-<version>.json,
//	memory/agents/<a>/.history/<k>/…                    → entry_history (kept versions)
//	memory/namespaces/<hash>/<key>.json, events.log      → memory_items, memory_events
//	tasks/<id>/.claim.*, .done.*                        → markers (still waiting)
//	any other file of tasks/<id>/                       → products (by path)
//
// Locks and temporary files are not history and are left out, as the
// tree's .gitignore leaves them out of git.
//
// A backend gives the package one transaction as a Tx; the SQL is the
// part both dialects share ($n parameters, ||, ORDER BY). Times go in as
// time.Time arguments, which a backend stores as its time type, and come
// out through Time, which reads a time.Time or text.
package tables

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// Tx is one transaction of a database backend, as a transfer uses it.
type Tx interface {
	// Exec runs one statement.
	Exec(ctx context.Context, sql string, args ...any) error
	// Query runs a query and calls row for each row it returns, in order;
	// scan reads the row's columns. An error from row ends the query.
	Query(ctx context.Context, sql string, row func(scan func(dest ...any) error) error, args ...any) error
}

// Report counts what an export wrote or an import loaded.
type Report struct {
	Files int // files written or read
	Tasks int
}

// ImportOptions says how an import treats a database that already holds
// a workspace.
type ImportOptions struct {
	// Replace empties the tables first; without it a database holding
	// any task, entry or event is refused.
	Replace bool
}

// Row is one statement of an import: an INSERT with its arguments.
type Row struct {
	SQL  string
	Args []any
}

// Load is a tree read into rows, in the order they must be inserted
// (every task before the rows that refer to it).
type Load struct {
	Rows []Row
	Report
}

// Tables hold a workspace's history on every database backend, in an
// order that empties them without breaking a reference.
var Tables = []string{"markers", "journal", "backups", "states", "events", "entries", "entry_history", "threads", "products", "tasks", "files", "tokens", "memory_items", "memory_events"}

// settings are the files init writes into an empty workspace: a database
// that holds only these holds no workspace yet.
var settings = []string{"workspace.json", ".gitignore", workspace.AgentsFile, "friction/friction.json"}

// Clear makes tx's database ready for an import: it refuses one that
// holds a workspace already (ErrConflict), or empties it when replace.
// extra names the backend's own history tables beyond Tables, emptied
// first.
func Clear(ctx context.Context, tx Tx, replace bool, extra ...string) error {
	all := append(append([]string{}, extra...), Tables...)
	if replace {
		for _, t := range all {
			if err := tx.Exec(ctx, "DELETE FROM "+t); err != nil {
				return fmt.Errorf("empty %s: %w", t, err)
			}
		}
		return nil
	}
	var counts []string
	for _, t := range append(append([]string{}, extra...), "tasks", "entries", "events", "tokens", "memory_items") {
		counts = append(counts, "(SELECT count(*) FROM "+t+")")
	}
	counts = append(counts, "(SELECT count(*) FROM files WHERE path NOT IN ('"+strings.Join(settings, "', '")+"'))")
	var n int64
	err := tx.Query(ctx, "SELECT "+strings.Join(counts, " + "), func(scan func(...any) error) error { return scan(&n) })
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	if n > 0 {
		return &workspace.Error{Kind: workspace.ErrConflict, Op: "import", Msg: "the database holds a workspace already",
			Hint: "import into a new database (a new schema on PostgreSQL, a new file on SQLite), or add --replace to overwrite it"}
	}
	// The settings init wrote give way to the tree's.
	return tx.Exec(ctx, "DELETE FROM files")
}

// Time scans a time column: a time.Time from a backend that has a time
// type, or the text another keeps (RFC 3339, the SQLite store's
// 2006-01-02T15:04:05.000Z among them).
type Time struct{ T *time.Time }

// Scan implements sql.Scanner.
func (t Time) Scan(src any) error {
	switch v := src.(type) {
	case time.Time:
		*t.T = v.UTC()
		return nil
	case string:
		return t.parse(v)
	case []byte:
		return t.parse(string(v))
	}
	return fmt.Errorf("scan a time from %T", src)
}

func (t Time) parse(s string) error {
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return fmt.Errorf("scan a time: %w", err)
	}
	*t.T = v.UTC()
	return nil
}

// Rows are the rows of a query as a database driver gives them.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// EachRow calls row with the scan of every row of rows, in order: how a
// driver answers Tx.Query. The caller closes rows.
func EachRow(rows Rows, row func(scan func(...any) error) error) error {
	for rows.Next() {
		if err := row(rows.Scan); err != nil {
			return err
		}
	}
	return rows.Err()
}
