package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/workspace"
)

// Writing the workspace as the canonical file tree, as PostgreSQL's
// Export does: the tables keep every document as the exact bytes of its
// file, so each goes back to its place byte for byte.
//
//	workspace.json, config/, friction/, skills/, … ← files (by path)
//	tasks/<id>/task.json, state.json                ← tasks, states
//	tasks/<id>/journal/<seq>[-<seq>].json           ← journal (one file per commit)
//	tasks/<id>/backups/<name>                       ← backups (named as backup list names them)
//	tasks/<id>/events.log                           ← events (one row per line)
//	tasks/<id>/threads/<thread>.json                ← threads
//	tasks/<id>/env/, sessions/, memory/             ← entries
//	tasks/<id>/.claim.*, .done.*                    ← markers still waiting
//	any other file of tasks/<id>/                   ← products (by path)

// TransferReport counts what an export wrote.
type TransferReport struct {
	Files int // files written
	Tasks int
}

const seqWidth = 12

func recordName(seq int64) string { return fmt.Sprintf("%0*d.json", seqWidth, seq) }
func batchName(first, last int64) string {
	return fmt.Sprintf("%0*d-%0*d.json", seqWidth, first, seqWidth, last)
}

// Export writes the workspace as the canonical file tree into dir, which
// must not exist or be empty. It reads one snapshot of the database (one
// read transaction), so a workspace in use exports as it was at one
// moment. Every path comes from the database: os.Root refuses any that
// would leave dir.
func (s *Store) Export(ctx context.Context, dir string) (TransferReport, error) {
	var rep TransferReport
	if err := emptyDir(dir); err != nil {
		return rep, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return rep, fmt.Errorf("export: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return rep, fmt.Errorf("export: %w", err)
	}
	defer root.Close()
	w := &treeWriter{root: root}
	for _, d := range []string{"tasks", "config", "friction", "memory/global", "memory/agents"} {
		w.mkdir(d)
	}
	err = s.read(ctx, func(tx *sql.Tx) error { return exportTx(ctx, tx, w, &rep) })
	if err == nil {
		err = w.err
	}
	rep.Files = w.files
	return rep, err
}

func exportTx(ctx context.Context, tx *sql.Tx, w *treeWriter, rep *TransferReport) error {
	if err := eachRow(ctx, tx, "SELECT path, body FROM files ORDER BY path", func(r *sql.Rows) error {
		var p, body string
		if err := r.Scan(&p, &body); err != nil {
			return err
		}
		w.write(p, body)
		return nil
	}); err != nil {
		return fmt.Errorf("export files: %w", err)
	}
	grants, err := listGrants(ctx, tx)
	if err != nil {
		return fmt.Errorf("export tokens: %w", err)
	}
	if len(grants) > 0 {
		data, err := atomicfile.Marshal(tokens.FileDoc{Tokens: grants})
		if err != nil {
			return fmt.Errorf("export tokens: %w", err)
		}
		w.writeMode(tokens.File, string(data), 0o600)
	}
	if err := eachRow(ctx, tx, "SELECT id, doc FROM tasks ORDER BY id", func(r *sql.Rows) error {
		var id, doc string
		if err := r.Scan(&id, &doc); err != nil {
			return err
		}
		rep.Tasks++
		w.mkdir(path.Join("tasks", id, "journal"))
		w.mkdir(path.Join("tasks", id, "threads"))
		w.write(path.Join("tasks", id, "task.json"), doc)
		return nil
	}); err != nil {
		return fmt.Errorf("export tasks: %w", err)
	}
	for _, q := range []struct{ sql, what string }{
		{"SELECT task_id, path, body FROM products ORDER BY task_id, path", "products"},
		{"SELECT task_id, 'state.json', doc FROM states ORDER BY task_id", "states"},
		{"SELECT task_id, 'threads/' || id || '.json', doc FROM threads ORDER BY task_id, id", "threads"},
		{"SELECT task_id, name, body FROM markers ORDER BY id", "markers"},
	} {
		if err := eachRow(ctx, tx, q.sql, func(r *sql.Rows) error {
			var id, p, body string
			if err := r.Scan(&id, &p, &body); err != nil {
				return err
			}
			w.write(path.Join("tasks", id, p), body)
			return nil
		}); err != nil {
			return fmt.Errorf("export %s: %w", q.what, err)
		}
	}
	if err := exportBackups(ctx, tx, w); err != nil {
		return err
	}
	if err := exportJournal(ctx, tx, w); err != nil {
		return err
	}
	if err := exportEvents(ctx, tx, w); err != nil {
		return err
	}
	return exportEntries(ctx, tx, w)
}

// exportBackups writes each task's backups under the names backup list
// gives them.
func exportBackups(ctx context.Context, tx *sql.Tx, w *treeWriter) error {
	ids, err := strings1(tx.QueryContext(ctx, "SELECT DISTINCT task_id FROM backups ORDER BY task_id"))
	if err != nil {
		return fmt.Errorf("export backups: %w", err)
	}
	for _, id := range ids {
		list, err := backupRows(ctx, tx, id)
		if err != nil {
			return fmt.Errorf("export backups: %w", err)
		}
		for _, b := range list {
			w.write(path.Join("tasks", id, "backups", b.info.Name), b.doc)
		}
	}
	return nil
}

// journalRow is one journal row as export reads it.
type journalRow struct {
	task, file, record, taken string
	seq, epoch                int64
}

// exportJournal writes the records of each commit in one file, as the
// file daemon does: a record imported from a file goes back to its file;
// the records the daemon took here in one transaction share its taken_at.
func exportJournal(ctx context.Context, tx *sql.Tx, w *treeWriter) error {
	var group []journalRow
	flush := func() error {
		if len(group) == 0 {
			return nil
		}
		g := group
		group = nil
		name := g[0].file
		if name == "" {
			name = recordName(g[0].seq)
			if len(g) > 1 {
				name = batchName(g[0].seq, g[len(g)-1].seq)
			}
		}
		if len(g) == 1 {
			w.write(path.Join("tasks", g[0].task, "journal", name), g[0].record)
			return nil
		}
		b := struct {
			Records []json.RawMessage `json:"records"`
		}{Records: make([]json.RawMessage, len(g))}
		for i, r := range g {
			b.Records[i] = json.RawMessage(r.record)
		}
		data, err := atomicfile.Marshal(b)
		if err != nil {
			return fmt.Errorf("journal %s of task %s: %w", name, g[0].task, err)
		}
		w.write(path.Join("tasks", g[0].task, "journal", name), string(data))
		return nil
	}
	err := eachRow(ctx, tx, "SELECT task_id, seq, taken_at, epoch, file, record FROM journal ORDER BY task_id, seq", func(r *sql.Rows) error {
		var j journalRow
		if err := r.Scan(&j.task, &j.seq, &j.taken, &j.epoch, &j.file, &j.record); err != nil {
			return err
		}
		if len(group) > 0 {
			last := group[len(group)-1]
			same := j.task == last.task && j.seq == last.seq+1 && j.file == last.file &&
				(j.file != "" || (j.taken == last.taken && j.epoch == last.epoch))
			if !same {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		group = append(group, j)
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return fmt.Errorf("export journal: %w", err)
	}
	return nil
}

func exportEvents(ctx context.Context, tx *sql.Tx, w *treeWriter) error {
	logs := map[string]*strings.Builder{}
	err := eachRow(ctx, tx, "SELECT task_id, line FROM events WHERE task_id <> '' ORDER BY id", func(r *sql.Rows) error {
		var id, line string
		if err := r.Scan(&id, &line); err != nil {
			return err
		}
		b := logs[id]
		if b == nil {
			b = &strings.Builder{}
			logs[id] = b
		}
		b.WriteString(line)
		b.WriteByte('\n')
		return nil
	})
	if err != nil {
		return fmt.Errorf("export events: %w", err)
	}
	for id, b := range logs {
		w.write(path.Join("tasks", id, workspace.EventsFile), b.String())
	}
	return nil
}

func exportEntries(ctx context.Context, tx *sql.Tx, w *treeWriter) error {
	err := eachRow(ctx, tx, `SELECT scope, owner, key, short_description, stored_by, created_at, updated_at, version, value
		FROM entries ORDER BY scope, owner, key`, func(r *sql.Rows) error {
		var scope, owner, created, updated, value string
		var e workspace.Entry
		if err := r.Scan(&scope, &owner, &e.Key, &e.ShortDescription, &e.StoredBy, &created, &updated, &e.Version, &value); err != nil {
			return err
		}
		e.CreatedAt, e.UpdatedAt, e.Value = parseTS(created), parseTS(updated), json.RawMessage(value)
		sc := workspace.Scope{Kind: workspace.ScopeKind(scope)}
		switch sc.Kind {
		case workspace.ScopeThread:
			sc.TaskID = owner
		case workspace.ScopeSession:
			sc.TaskID, sc.ThreadID, _ = strings.Cut(owner, "/")
		case workspace.ScopeAgent:
			sc.Agent = owner
		}
		dir, err := sc.Dir()
		if err != nil {
			return fmt.Errorf("entry %q of scope %s %s: %w", e.Key, scope, owner, err)
		}
		data, err := atomicfile.Marshal(e)
		if err != nil {
			return fmt.Errorf("entry %q of scope %s %s: %w", e.Key, scope, owner, err)
		}
		w.write(path.Join(dir, workspace.EncodeKey(e.Key)+".json"), string(data))
		return nil
	})
	if err != nil {
		return fmt.Errorf("export entries: %w", err)
	}
	return nil
}

func eachRow(ctx context.Context, tx *sql.Tx, q string, f func(*sql.Rows) error) error {
	rows, err := tx.QueryContext(ctx, q)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := f(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// treeWriter writes files under a root, keeping the first error.
type treeWriter struct {
	root  *os.Root
	files int
	err   error
}

func (w *treeWriter) mkdir(p string) {
	if w.err == nil {
		if err := w.root.MkdirAll(filepath.FromSlash(p), 0o755); err != nil {
			w.err = fmt.Errorf("export %s: %w", p, err)
		}
	}
}

func (w *treeWriter) write(p, body string) { w.writeMode(p, body, 0o644) }

func (w *treeWriter) writeMode(p, body string, mode fs.FileMode) {
	if w.err != nil {
		return
	}
	if !fs.ValidPath(p) {
		w.err = fmt.Errorf("export: %q is not a path inside the workspace", p)
		return
	}
	w.mkdir(path.Dir(p))
	if w.err != nil {
		return
	}
	if err := w.root.WriteFile(filepath.FromSlash(p), []byte(body), mode); err != nil {
		w.err = fmt.Errorf("export %s: %w", p, err)
		return
	}
	w.files++
}

// emptyDir refuses a dir that holds anything.
func emptyDir(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("export to %s: %w", dir, err)
	}
	if len(ents) > 0 {
		return &workspace.Error{Kind: workspace.ErrConflict, Op: "export to " + dir, Msg: "the directory is not empty",
			Hint: "export into a new or empty directory"}
	}
	return nil
}
