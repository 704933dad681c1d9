package tables

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/workspace"
)

// ReadTree reads the file workspace at dir into the rows that hold it.
// It refuses, naming the file and the fix, what an export could not give
// back byte for byte: a torn events line, a journal file not in the
// daemon's form, an entry not in the canonical form, a NUL byte (which a
// text column cannot keep), a symlink. A daemon must not be serving the
// tree while it is read.
func ReadTree(dir string) (Load, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return Load{}, &workspace.Error{Kind: workspace.ErrNotFound, Op: "import " + dir, Err: err, Hint: "name a workspace directory with --from DIR"}
	}
	defer root.Close()
	if _, err := root.Stat("workspace.json"); err != nil {
		if _, terr := root.Stat("tasks"); terr != nil {
			return Load{}, &workspace.Error{Kind: workspace.ErrNotFound, Op: "import " + dir,
				Msg: "not a workspace (no workspace.json or tasks/ in it)", Hint: "name a workspace directory with --from DIR"}
		}
	}
	r := &importer{root: root, dir: dir}
	if err := r.walk("."); err != nil {
		return Load{}, err
	}
	return Load{Rows: append(r.rows, r.deferred...), Report: Report{Files: r.files, Tasks: r.tasks}}, nil
}

// importer reads a tree into rows.
type importer struct {
	root  *os.Root
	dir   string
	rows  []Row
	files int
	tasks int
	// deferred rows refer to their task, inserted after every task row.
	deferred []Row
}

// add queues a row that refers to no task.
func (r *importer) add(sql string, args ...any) { r.rows = append(r.rows, Row{sql, args}) }

// NotHistory reports whether a file or directory name of a workspace tree
// is a lock or a temporary file, which an export or import leaves out
// (as the tree's .gitignore leaves them out of git).
func NotHistory(name string) bool { return skipped(name) }

func skipped(name string) bool {
	return name == ".locks" || name == ".workspaced.lock" || strings.HasPrefix(name, "..") ||
		strings.HasPrefix(name, ".tmp-") || strings.Contains(name, ".tmp-") ||
		(strings.HasPrefix(name, ".") && strings.Contains(name, ".json") && !strings.HasSuffix(name, ".json") && !isMarker(name))
}

func isMarker(name string) bool { _, ok := workspace.IsMarkerName(name); return ok }

func (r *importer) walk(dir string) error {
	ents, err := fs.ReadDir(r.root.FS(), dir)
	if err != nil {
		return fmt.Errorf("import %s: %w", path.Join(r.dir, dir), err)
	}
	for _, e := range ents {
		p := path.Join(dir, e.Name())
		if skipped(e.Name()) {
			continue
		}
		switch {
		case e.IsDir():
			if err := r.walk(p); err != nil {
				return err
			}
		case e.Type().IsRegular():
			if err := r.file(p); err != nil {
				return err
			}
		default:
			return &workspace.Error{Kind: workspace.ErrUnsafe, Op: "import " + path.Join(r.dir, p),
				Msg: "neither a file nor a directory (a symlink?)", Hint: "replace it with the file it stands for, or remove it"}
		}
	}
	return nil
}

func (r *importer) refuse(p, msg, hint string) error {
	return &workspace.Error{Kind: workspace.ErrInvalid, Op: "import " + path.Join(r.dir, p), Msg: msg, Hint: hint}
}

func (r *importer) file(p string) error {
	data, err := r.root.ReadFile(filepath.FromSlash(p))
	if err != nil {
		return fmt.Errorf("import %s: %w", path.Join(r.dir, p), err)
	}
	body := string(data)
	if strings.IndexByte(body, 0) >= 0 {
		return r.refuse(p, "holds a NUL byte, which a text column cannot keep", "remove the file or its NUL bytes")
	}
	r.files++
	parts := strings.Split(p, "/")
	switch {
	case len(parts) >= 3 && parts[0] == "tasks":
		return r.taskFile(p, parts[1], parts[2:], body)
	case len(parts) == 5 && parts[0] == "memory" && parts[1] == "global" && parts[2] == workspace.EntryHistoryDir:
		return r.history(p, workspace.Scope{Kind: workspace.ScopeGlobal}, "", parts[3], parts[4], body)
	case len(parts) == 6 && parts[0] == "memory" && parts[1] == "agents" && parts[3] == workspace.EntryHistoryDir:
		return r.history(p, workspace.Scope{Kind: workspace.ScopeAgent, Agent: parts[2]}, parts[2], parts[4], parts[5], body)
	case len(parts) >= 3 && parts[0] == "memory" && parts[1] == "global" && len(parts) == 3:
		return r.entry(p, workspace.Scope{Kind: workspace.ScopeGlobal}, "", parts[2], body)
	case len(parts) >= 3 && parts[0] == "memory" && parts[1] == "namespaces":
		return r.memoryFile(p, body)
	case len(parts) == 4 && parts[0] == "memory" && parts[1] == "agents":
		return r.entry(p, workspace.Scope{Kind: workspace.ScopeAgent, Agent: parts[2]}, parts[2], parts[3], body)
	}
	if p == tokens.File {
		return r.tokens(p, data)
	}
	r.add("INSERT INTO files (path, body) VALUES ($1, $2)", p, body)
	return nil
}

// tokens loads the agents file into the tokens table, where the agent
// role cannot read it (the files table it may read). Export writes it
// back as the CLI writes it, so a file written otherwise is refused.
func (r *importer) tokens(p string, data []byte) error {
	doc, err := tokens.Parse(data)
	if err != nil {
		return r.refuse(p, workspace.Reason(err), "fix the file (or remove it and add the tokens again after the import)")
	}
	if canon, err := atomicfile.Marshal(doc); err != nil || !bytes.Equal(canon, data) {
		return r.refuse(p, "is not laid out as 'workspaced token' writes it, so an export could not give it back byte for byte",
			"let 'workspaced token' write it (revoke and add a token), or remove it and add the tokens after the import")
	}
	for i, g := range doc.Tokens {
		b, err := json.Marshal(g)
		if err != nil {
			return err
		}
		r.add("INSERT INTO tokens (sha256, n, doc) VALUES ($1, $2, $3)", g.SHA256, i+1, string(b))
	}
	return nil
}

func (r *importer) taskFile(p, id string, rest []string, body string) error {
	if err := workspace.ValidateID("task id", id); err != nil {
		return r.refuse(p, err.Error(), "rename the task directory to a valid id")
	}
	name := rest[len(rest)-1]
	switch {
	case len(rest) == 1 && name == "task.json":
		var t workspace.Task
		if err := json.Unmarshal([]byte(body), &t); err != nil {
			return r.refuse(p, "task.json does not parse: "+err.Error(), "fix the file and import again")
		}
		r.tasks++
		// Tasks first: every other row of the task refers to it.
		r.add("INSERT INTO tasks (id, created_at, doc) VALUES ($1, $2, $3)", id, t.CreatedAt, body)
		return nil
	case len(rest) == 1 && name == "state.json":
		var st workspace.State
		if err := json.Unmarshal([]byte(body), &st); err != nil {
			return r.refuse(p, "state.json does not parse: "+err.Error(), "restore a backup with 'workspaced backup restore' first")
		}
		r.later("INSERT INTO states (task_id, journal_seq, doc, epoch) VALUES ($1, $2, $3, 0)", id, st.JournalSeq, body)
		return nil
	case len(rest) == 1 && name == workspace.EventsFile:
		return r.events(p, id, body)
	case len(rest) == 1 && isMarker(name):
		kind, _ := workspace.IsMarkerName(name)
		r.later("INSERT INTO markers (task_id, kind, name, body) VALUES ($1, $2, $3, $4)", id, kind, name, body)
		return nil
	case len(rest) == 2 && rest[0] == "journal":
		return r.journal(p, id, name, body)
	case len(rest) == 2 && rest[0] == "backups":
		var st workspace.State
		if err := json.Unmarshal([]byte(body), &st); err != nil {
			return r.refuse(p, "backup does not parse: "+err.Error(), "remove the torn backup and import again")
		}
		r.later("INSERT INTO backups (task_id, journal_seq, doc, name) VALUES ($1, $2, $3, $4)", id, st.JournalSeq, body, name)
		return nil
	case len(rest) == 2 && rest[0] == "threads" && strings.HasSuffix(name, ".json"):
		r.later("INSERT INTO threads (task_id, id, doc) VALUES ($1, $2, $3)", id, strings.TrimSuffix(name, ".json"), body)
		return nil
	case len(rest) == 2 && rest[0] == "env":
		return r.entry(p, workspace.Scope{Kind: workspace.ScopeThread, TaskID: id}, id, name, body)
	case len(rest) == 3 && rest[0] == "sessions":
		return r.entry(p, workspace.Scope{Kind: workspace.ScopeSession, TaskID: id, ThreadID: rest[1]}, id+"/"+rest[1], name, body)
	}
	r.later("INSERT INTO products (task_id, path, body) VALUES ($1, $2, $3)", id, path.Join(rest...), body)
	return nil
}

// later queues a row that refers to its task. Walking tasks/<id>/ in
// name order reaches files such as backups/ before task.json, so these
// are inserted after every task.
func (r *importer) later(sql string, args ...any) {
	r.deferred = append(r.deferred, Row{sql, args})
}

func (r *importer) events(p, id, body string) error {
	if body != "" && !strings.HasSuffix(body, "\n") {
		return r.refuse(p, "the last line is torn (no newline at the end)", "end the file with a newline, or remove its torn last line")
	}
	for i, line := range strings.Split(strings.TrimSuffix(body, "\n"), "\n") {
		if body == "" {
			break
		}
		e, err := workspace.ParseEvent(line)
		if err != nil {
			return r.refuse(p, fmt.Sprintf("line %d: %v", i+1, err), "fix or remove the line and import again")
		}
		r.later("INSERT INTO events (task_id, time, line) VALUES ($1, $2, $3)", id, e.Time, line)
	}
	return nil
}

// journal reads one journal file into its records; the file's name is
// kept so that an export writes the same file. A file whose records would
// not be written back byte for byte is refused rather than changed.
func (r *importer) journal(p, id, name, body string) error {
	first, last, ok := parseRecordName(name)
	if !ok {
		return r.refuse(p, "not a journal record file (a marker taken but not yet journaled, or a stray file)",
			"run 'workspaced serve' on the directory once so the daemon settles its journal, then import again")
	}
	var raws []json.RawMessage
	if first == last {
		raws = []json.RawMessage{json.RawMessage(body)}
	} else {
		var b journalBatch
		if err := json.Unmarshal([]byte(body), &b); err != nil {
			return r.refuse(p, "journal file does not parse: "+err.Error(), "restore it from git or a copy")
		}
		raws = b.Records
	}
	if int64(len(raws)) != last-first+1 {
		return r.refuse(p, fmt.Sprintf("holds %d records, its name says %d", len(raws), last-first+1), "restore it from git or a copy")
	}
	recs := make([]string, len(raws))
	for i, raw := range raws {
		var rec workspace.JournalRecord
		if err := json.Unmarshal(raw, &rec); err != nil {
			return r.refuse(p, "journal record does not parse: "+err.Error(), "restore it from git or a copy")
		}
		if rec.Seq != first+int64(i) {
			return r.refuse(p, fmt.Sprintf("record %d has seq %d", i, rec.Seq), "restore it from git or a copy")
		}
		data, err := atomicfile.Marshal(raw)
		if err != nil {
			return r.refuse(p, err.Error(), "restore it from git or a copy")
		}
		recs[i] = string(data)
		r.later("INSERT INTO journal (task_id, seq, taken_at, name, record, epoch, file) VALUES ($1, $2, $3, $4, $5, 0, $6)",
			id, rec.Seq, rec.TakenAt, rec.File, recs[i], name)
	}
	// What export will write from these rows must be this file.
	again := recs[0]
	if len(recs) > 1 {
		b := journalBatch{Records: make([]json.RawMessage, len(recs))}
		for i := range recs {
			b.Records[i] = json.RawMessage(recs[i])
		}
		data, _ := atomicfile.Marshal(b)
		again = string(data)
	}
	if again != body {
		return r.refuse(p, "is not in the canonical form the daemon writes, and would not export byte for byte",
			"restore it from git or a copy")
	}
	return nil
}

func parseRecordName(name string) (first, last int64, ok bool) {
	base, found := strings.CutSuffix(name, ".json")
	if !found {
		return 0, 0, false
	}
	a, b, batch := strings.Cut(base, "-")
	first, err := parseSeq(a)
	if err != nil {
		return 0, 0, false
	}
	if !batch {
		return first, first, true
	}
	last, err = parseSeq(b)
	if err != nil || last <= first {
		return 0, 0, false
	}
	return first, last, true
}

func parseSeq(s string) (int64, error) {
	if len(s) != seqWidth {
		return 0, errors.New("not 12 digits")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err == nil && n <= 0 {
		err = errors.New("not positive")
	}
	return n, err
}

// entry reads one entry file; its row writes back the same bytes.
func (r *importer) entry(p string, sc workspace.Scope, owner, name, body string) error {
	enc, found := strings.CutSuffix(name, ".json")
	if !found || strings.HasPrefix(name, ".") {
		return r.refuse(p, "not an entry file (<key>.json)", "move the file out of the scope's directory")
	}
	e, value, err := r.entryDoc(p, enc, body)
	if err != nil {
		return err
	}
	r.later(`INSERT INTO entries (scope, owner, key, short_description, stored_by, created_at, updated_at, version, size, value)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		string(sc.Kind), owner, e.Key, e.ShortDescription, e.StoredBy, e.CreatedAt, e.UpdatedAt, e.Version, len(value), value)
	return nil
}

// history reads one kept version of a memory entry
// (<scope>/.history/<key file name>/<version file>) into entry_history;
// export writes the same file from its row.
func (r *importer) history(p string, sc workspace.Scope, owner, enc, name, body string) error {
	if !workspace.IsEntryHistoryName(name) {
		return r.refuse(p, "not a kept version of a memory entry (<ms, 13 digits>-<version, 6 digits>.json)", "move the file out of the .history directory")
	}
	e, value, err := r.entryDoc(p, enc, body)
	if err != nil {
		return err
	}
	if want := workspace.EntryHistoryName(e); name != want {
		return r.refuse(p, fmt.Sprintf("holds version %d of %s, which is kept as %s", e.Version, e.UpdatedAt.Format(time.RFC3339Nano), want),
			"restore the file from a copy, or remove it")
	}
	r.add(`INSERT INTO entry_history (scope, owner, key, short_description, stored_by, created_at, updated_at, version, value)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		string(sc.Kind), owner, e.Key, e.ShortDescription, e.StoredBy, e.CreatedAt, e.UpdatedAt, e.Version, value)
	return nil
}

// entryDoc reads an entry document whose key is encoded as enc, checked
// to be in the canonical form workspaced writes, and its value compacted.
func (r *importer) entryDoc(p, enc, body string) (workspace.Entry, string, error) {
	key, err := workspace.DecodeKey(enc)
	if err != nil {
		return workspace.Entry{}, "", r.refuse(p, err.Error(), "move the file out of the scope's directory")
	}
	var e workspace.Entry
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		return e, "", r.refuse(p, "entry does not parse: "+err.Error(), "fix the file and import again")
	}
	if e.Key != key {
		return e, "", r.refuse(p, fmt.Sprintf("holds key %q, its name says %q", e.Key, key), "fix the file and import again")
	}
	if err := workspace.ValidateDescription(e.ShortDescription); err != nil {
		return e, "", r.refuse(p, err.Error(), "store it again with a description of UTF-8 text without NUL, then import")
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, e.Value); err != nil {
		return e, "", r.refuse(p, "value does not parse: "+err.Error(), "fix the file and import again")
	}
	if again, err := atomicfile.Marshal(e); err != nil || string(again) != body {
		return e, "", r.refuse(p, "is not in the canonical form workspaced writes, and would not export byte for byte",
			"store it again with 'workspaced env store' or 'memory store', then import")
	}
	return e, compact.String(), nil
}
