package bench

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/fsnotify/fsnotify"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/workspace"
)

// The lone floor's process: the least any daemon must do for one lone
// marker, and nothing more, in a directory the harness prepared
// (lonefloor.go). It sleeps on a watch of the directory (fsnotify, as the
// daemon's wake-ups); woken, it takes what is waiting and sleeps again.
//
// On files, for each marker renamed into the directory: read it, rename
// it into journal/ and fsync journal/ (the commit point), append one
// line to events.log (not fsynced, as the daemon's), write state.json —
// the harness's document of the row's size, one byte changed — with
// atomicfile (temporary file written and fsynced, renamed, directory
// fsynced). No record file, no state machine, no encoding, no backup, no
// removal of the taken marker, no rescan or poll.
//
// On SQLite (floor.db, the store's pragmas): woken by a write to the
// database or its log, it takes the watch off (its own commit's writes
// unheard, as the daemon's), and in one transaction (BEGIN IMMEDIATE,
// which waits out an agent's commit under way) reads the waiting markers,
// inserts a journal row and an event row for each, updates the state row
// to the document once and deletes the markers; COMMIT; then it puts the
// watch back and looks once more in a transaction of its own (a marker
// inserted while the watch was off is heard by no one: this empty look,
// a BEGIN IMMEDIATE, one SELECT and a ROLLBACK, is the least a daemon
// that mutes its watch must do for it; the daemon follows with timers
// instead). No machine, no encoding, no poll.

// lonefloorDB is the lone floor's database file on SQLite.
const lonefloorDB = "floor.db"

// LoneFloorMain runs the lone floor's process on dir (prepared by the
// harness) for store "files" or "sqlite": it writes "ready" to out once
// its watch is in place, and returns when in ends.
func LoneFloorMain(store, dir string, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		_, _ = io.Copy(io.Discard, in)
		cancel()
	}()
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer fw.Close()
	var wake func(fsnotify.Event) error
	switch store {
	case "files":
		f, err := openFilesLoneFloor(dir)
		if err != nil {
			return err
		}
		defer f.close()
		wake = func(ev fsnotify.Event) error {
			name := filepath.Base(ev.Name)
			if !ev.Has(fsnotify.Create) || !strings.HasPrefix(name, workspace.DonePrefix) {
				return nil
			}
			return f.take(name)
		}
	case "sqlite":
		s, err := openSQLiteLoneFloor(ctx, dir, fw)
		if err != nil {
			return err
		}
		defer s.close()
		wake = func(ev fsnotify.Event) error {
			if n := filepath.Base(ev.Name); n != lonefloorDB && n != lonefloorDB+"-wal" {
				return nil
			}
			return s.take(ctx)
		}
	default:
		return fmt.Errorf("bench: no lone floor on %q", store)
	}
	if err := fw.Add(dir); err != nil {
		return err
	}
	bw := bufio.NewWriter(out)
	fmt.Fprintln(bw, "ready")
	if err := bw.Flush(); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-fw.Errors:
			return fmt.Errorf("bench: the lone floor's watch: %w", err)
		case ev := <-fw.Events:
			if err := wake(ev); err != nil && ctx.Err() == nil {
				return err
			}
		}
	}
}

// filesLoneFloor is the lone floor on files.
type filesLoneFloor struct {
	root    *os.Root
	journal *os.File // journal/, fsynced after each take
	events  *os.File // events.log, appended to
	doc     []byte   // the state document
	seq     int64
}

func openFilesLoneFloor(dir string) (*filesLoneFloor, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	f := &filesLoneFloor{root: root}
	f.doc, err = root.ReadFile("state.json")
	if err == nil {
		f.journal, err = root.Open("journal")
	}
	if err == nil {
		f.events, err = root.OpenFile("events.log", os.O_WRONLY|os.O_APPEND, 0)
	}
	if err != nil {
		f.close()
		return nil, err
	}
	return f, nil
}

// take journals the marker name, appends its event and writes the state.
func (f *filesLoneFloor) take(name string) error {
	body, err := f.root.ReadFile(name)
	if err != nil {
		return fmt.Errorf("bench: the lone floor reads marker %s: %w", name, err)
	}
	if !json.Valid(body) {
		return fmt.Errorf("bench: the lone floor reads marker %s: not JSON", name)
	}
	f.seq++
	if err := f.root.Rename(name, fmt.Sprintf("journal/%012d.taken%s", f.seq, name)); err != nil {
		return err
	}
	if err := f.journal.Sync(); err != nil {
		return err
	}
	if _, err := io.WriteString(f.events, eventLine(f.seq, name)+"\n"); err != nil {
		return err
	}
	f.doc[len(f.doc)/2] = byte('a' + f.seq%26)
	return atomicfile.WriteFile(f.root, "state.json", f.doc, 0o644)
}

func (f *filesLoneFloor) close() {
	if f.events != nil {
		f.events.Close()
	}
	if f.journal != nil {
		f.journal.Close()
	}
	f.root.Close()
}

// sqliteLoneFloor is the lone floor on SQLite: one connection, the
// statements prepared once.
type sqliteLoneFloor struct {
	db  *sql.DB
	fw  *fsnotify.Watcher
	dir string
	doc []byte
	seq int64
	// The take's statements, in their order.
	markers, journal, event, taken, state *sql.Stmt
}

// lonefloorDSN is the lone floor's database with the store's pragmas
// (workspace/sqlite's dsn), for the process's connection and the
// harness's.
func lonefloorDSN(dir string) string {
	return fileDSN(filepath.Join(dir, lonefloorDB), "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)"+
		"&_pragma=journal_size_limit(16777216)&_pragma=wal_autocheckpoint(3072)&_pragma=temp_store(MEMORY)&_txlock=immediate")
}

func openSQLiteLoneFloor(ctx context.Context, dir string, fw *fsnotify.Watcher) (*sqliteLoneFloor, error) {
	db, err := sql.Open("sqlite", lonefloorDSN(dir))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	s := &sqliteLoneFloor{db: db, fw: fw, dir: dir}
	var doc string
	err = db.QueryRowContext(ctx, "SELECT v, seq FROM state WHERE k = 'state'").Scan(&doc, &s.seq)
	s.doc = []byte(doc)
	for _, p := range []struct {
		st **sql.Stmt
		q  string
	}{
		{&s.markers, "SELECT name, body FROM markers ORDER BY name"},
		{&s.journal, "INSERT INTO journal (seq, name, body) VALUES (?, ?, ?)"},
		{&s.event, "INSERT INTO events (seq, line) VALUES (?, ?)"},
		{&s.taken, "DELETE FROM markers WHERE name = ?"},
		{&s.state, "UPDATE state SET v = ?, seq = ? WHERE k = 'state'"},
	} {
		if err == nil {
			*p.st, err = db.PrepareContext(ctx, p.q)
		}
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// take takes every waiting marker in one transaction, with the watch off
// meanwhile (its own commit's writes unheard); then, the watch back on,
// it looks again, in a transaction that waits out a writer which began
// while the watch was off, until it finds none.
func (s *sqliteLoneFloor) take(ctx context.Context) error {
	if err := s.fw.Remove(s.dir); err != nil {
		return err
	}
	_, err := s.commit(ctx)
	if aerr := s.fw.Add(s.dir); err == nil {
		err = aerr
	}
	for n := 1; err == nil && n > 0; {
		n, err = s.commit(ctx)
	}
	return err
}

// commit is one transaction: the markers read, journaled, logged and
// deleted, the state updated; n is how many it took.
func (s *sqliteLoneFloor) commit(ctx context.Context) (n int, err error) {
	tx, err := s.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE (_txlock): waits for a writer under way
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	st := func(p *sql.Stmt) *sql.Stmt { return tx.StmtContext(ctx, p) }
	rows, err := st(s.markers).QueryContext(ctx)
	if err != nil {
		return 0, err
	}
	var names, bodies []string
	for rows.Next() {
		var n, b string
		if err := rows.Scan(&n, &b); err != nil {
			rows.Close()
			return 0, err
		}
		names, bodies = append(names, n), append(bodies, b)
	}
	if err := rows.Close(); err != nil {
		return 0, err
	}
	if len(names) == 0 {
		return 0, nil
	}
	for i, n := range names {
		if !json.Valid([]byte(bodies[i])) {
			return 0, fmt.Errorf("bench: the lone floor reads marker %s: not JSON", n)
		}
		s.seq++
		if _, err := st(s.journal).ExecContext(ctx, s.seq, n, bodies[i]); err != nil {
			return 0, err
		}
		if _, err := st(s.event).ExecContext(ctx, s.seq, eventLine(s.seq, n)); err != nil {
			return 0, err
		}
		if _, err := st(s.taken).ExecContext(ctx, n); err != nil {
			return 0, err
		}
	}
	s.doc[len(s.doc)/2] = byte('a' + s.seq%26)
	if _, err := st(s.state).ExecContext(ctx, string(s.doc), s.seq); err != nil {
		return 0, err
	}
	return len(names), tx.Commit()
}

func (s *sqliteLoneFloor) close() { s.db.Close() }

// eventLine is the event a take logs for marker name, taken as seq.
func eventLine(seq int64, name string) string {
	return fmt.Sprintf(`{"seq":%d,"type":"subtask_completed","marker":%q}`, seq, name)
}
