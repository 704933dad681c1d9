package tables

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/backup"
	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// journalBatch is a journal file of several records, as the file daemon
// writes it.
type journalBatch struct {
	Records []json.RawMessage `json:"records"`
}

const seqWidth = 12

func recordName(seq int64) string { return fmt.Sprintf("%0*d.json", seqWidth, seq) }
func batchName(first, last int64) string {
	return fmt.Sprintf("%0*d-%0*d.json", seqWidth, first, seqWidth, last)
}

// Export writes the workspace as the canonical file tree into dir, which
// must not exist or be empty (ErrConflict). snapshot runs its function in
// one read transaction of the backend that sees one snapshot, so a
// workspace in use exports as it was at one moment.
func Export(ctx context.Context, dir string, snapshot func(func(Tx) error) error) (Report, error) {
	var rep Report
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
	err = snapshot(func(tx Tx) error { return exportTx(ctx, tx, w, &rep) })
	if err == nil {
		err = w.err
	}
	rep.Files = w.files
	return rep, err
}

func exportTx(ctx context.Context, tx Tx, w *treeWriter, rep *Report) error {
	// Files by path: workspace.json, config/agents.json, the friction
	// log, skills, .gitignore.
	if err := eachRow(ctx, tx, "SELECT path, body FROM files ORDER BY path", func(scan func(...any) error) error {
		var p, body string
		if err := scan(&p, &body); err != nil {
			return err
		}
		w.write(p, body)
		return nil
	}); err != nil {
		return fmt.Errorf("export files: %w", err)
	}
	// The agents' tokens, as the CLI writes config/tokens.json: private.
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
	if err := eachRow(ctx, tx, "SELECT id, doc FROM tasks ORDER BY id", func(scan func(...any) error) error {
		var id, doc string
		if err := scan(&id, &doc); err != nil {
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
		if err := eachRow(ctx, tx, q.sql, func(scan func(...any) error) error {
			var id, p, body string
			if err := scan(&id, &p, &body); err != nil {
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
	if err := exportEntries(ctx, tx, w); err != nil {
		return err
	}
	if err := exportHistory(ctx, tx, w); err != nil {
		return err
	}
	return exportMemory(ctx, tx, w)
}

// exportBackups names a backup the daemon kept in the database as the
// stores name it (backup.Name of its saved_at, a counter after the stamp
// when two of a task share it), so the tree holds what 'backup list'
// showed.
func exportBackups(ctx context.Context, tx Tx, w *treeWriter) error {
	seen := map[string]int{} // task and stamp → backups named so far
	err := eachRow(ctx, tx, "SELECT task_id, name, saved_at, doc FROM backups ORDER BY task_id, n", func(scan func(...any) error) error {
		var id, name, doc string
		var saved time.Time
		if err := scan(&id, &name, Time{&saved}, &doc); err != nil {
			return err
		}
		if name == "" {
			stamp := id + "/" + backup.Name("state_", saved, 0)
			name = backup.Name("state_", saved, seen[stamp])
			seen[stamp]++
		}
		w.write(path.Join("tasks", id, "backups", name), doc)
		return nil
	})
	if err != nil {
		return fmt.Errorf("export backups: %w", err)
	}
	return nil
}

// journalRow is one journal row as export reads it.
type journalRow struct {
	task, file, record string
	seq, epoch         int64
	taken              time.Time
}

// exportJournal writes the records of each chunk in one file, as the
// file daemon does: a record imported from a file goes back to its file;
// the records the daemon took here in one transaction share its taken_at
// and epoch.
func exportJournal(ctx context.Context, tx Tx, w *treeWriter) error {
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
		b := journalBatch{Records: make([]json.RawMessage, len(g))}
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
	err := eachRow(ctx, tx, "SELECT task_id, seq, taken_at, epoch, file, record FROM journal ORDER BY task_id, seq", func(scan func(...any) error) error {
		var j journalRow
		if err := scan(&j.task, &j.seq, Time{&j.taken}, &j.epoch, &j.file, &j.record); err != nil {
			return err
		}
		if len(group) > 0 {
			last := group[len(group)-1]
			same := j.task == last.task && j.seq == last.seq+1 && j.file == last.file &&
				(j.file != "" || (j.taken.Equal(last.taken) && j.epoch == last.epoch))
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

func exportEvents(ctx context.Context, tx Tx, w *treeWriter) error {
	logs := map[string]*strings.Builder{}
	err := eachRow(ctx, tx, "SELECT task_id, line FROM events WHERE task_id <> '' ORDER BY id", func(scan func(...any) error) error {
		var id, line string
		if err := scan(&id, &line); err != nil {
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

func exportEntries(ctx context.Context, tx Tx, w *treeWriter) error {
	return exportEntryRows(ctx, tx, w, "entries", "scope, owner, key", func(dir string, e workspace.Entry) string {
		return path.Join(dir, workspace.EncodeKey(e.Key)+".json")
	})
}

// exportHistory writes the kept versions of memory entries (entry_history)
// where the file store keeps them: <scope dir>/.history/<key file
// name>/<workspace.EntryHistoryName>, oldest first.
func exportHistory(ctx context.Context, tx Tx, w *treeWriter) error {
	return exportEntryRows(ctx, tx, w, "entry_history", "id", func(dir string, e workspace.Entry) string {
		return path.Join(dir, workspace.EntryHistoryDir, workspace.EncodeKey(e.Key), workspace.EntryHistoryName(e))
	})
}

// exportEntryRows writes each row of an entries-shaped table, in order,
// as an entry file at the path name gives in its scope's directory.
func exportEntryRows(ctx context.Context, tx Tx, w *treeWriter, table, order string, name func(dir string, e workspace.Entry) string) error {
	err := eachRow(ctx, tx, `SELECT scope, owner, key, short_description, stored_by, created_at, updated_at, version, value
		FROM `+table+` ORDER BY `+order, func(scan func(...any) error) error {
		var scope, owner, value string
		var e workspace.Entry
		if err := scan(&scope, &owner, &e.Key, &e.ShortDescription, &e.StoredBy, Time{&e.CreatedAt}, Time{&e.UpdatedAt}, &e.Version, &value); err != nil {
			return err
		}
		e.CreatedAt, e.UpdatedAt, e.Value = e.CreatedAt.UTC(), e.UpdatedAt.UTC(), json.RawMessage(value)
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
		w.write(name(dir, e), string(data))
		return nil
	})
	if err != nil {
		return fmt.Errorf("export %s: %w", table, err)
	}
	return nil
}

func eachRow(ctx context.Context, tx Tx, sql string, f func(scan func(...any) error) error) error {
	return tx.Query(ctx, sql, f)
}

// listGrants reads the agents' tokens in the order they were added.
func listGrants(ctx context.Context, tx Tx) ([]tokens.Grant, error) {
	var out []tokens.Grant
	err := tx.Query(ctx, "SELECT doc FROM tokens ORDER BY n, sha256", func(scan func(...any) error) error {
		var doc string
		if err := scan(&doc); err != nil {
			return err
		}
		g, err := sqlstore.DecodeGrant(doc)
		if err != nil {
			return err
		}
		out = append(out, g)
		return nil
	})
	return out, err
}

// treeWriter writes files under a root, keeping the first error. Every
// path comes from the database: os.Root refuses any that would leave dir.
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
